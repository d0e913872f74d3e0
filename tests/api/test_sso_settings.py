"""The single sign-on settings: what is refused at start, and how the role map reads."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.api.settings import ApiSettings, OidcGrant


def _settings(**env: str) -> ApiSettings:
    return ApiSettings(_env_file=None, **env)  # type: ignore[call-arg]


class TestSsoSettings:
    def test_off_by_default(self) -> None:
        assert _settings().oidc_issuer is None

    def test_an_issuer_needs_a_client_id(self) -> None:
        with pytest.raises(ValidationError, match="LEAFLAB_OIDC_CLIENT_ID"):
            _settings(oidc_issuer="https://id.lab.example")

    @pytest.mark.parametrize(
        "issuer", ["http://id.lab.example", "ftp://127.0.0.1", "http://10.0.0.5:8080"]
    )
    def test_a_plain_http_issuer_is_refused_off_loopback(self, issuer: str) -> None:
        with pytest.raises(ValidationError, match="must be https"):
            _settings(oidc_issuer=issuer, oidc_client_id="leaflab")

    @pytest.mark.parametrize("issuer", ["https://id.lab.example/realms/lab", "http://127.0.0.1:9"])
    def test_https_or_loopback_is_accepted(self, issuer: str) -> None:
        assert _settings(oidc_issuer=issuer, oidc_client_id="leaflab").oidc_issuer == issuer

    def test_the_role_map_is_json_from_the_environment(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(
            "LEAFLAB_OIDC_ROLE_MAP",
            '{"lab-admins": {"admin": true}, "lab-a": {"projects": {"Lab A": "owner"}}}',
        )
        assert _settings().oidc_role_map == {
            "lab-admins": OidcGrant(admin=True),
            "lab-a": OidcGrant(projects={"Lab A": "owner"}),
        }

    def test_a_role_map_naming_an_unknown_role_is_refused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("LEAFLAB_OIDC_ROLE_MAP", '{"g": {"projects": {"Lab A": "root"}}}')
        with pytest.raises(ValidationError):
            _settings()
