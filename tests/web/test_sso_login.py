"""Signing in with OpenID Connect against a real provider on loopback (tests/web/oidc_provider.py).

A first sign-in provisions the user from the verified e-mail with the roles the
role claim maps to and sets the ordinary session cookie; every refusal (another
audience, expired, foreign signature, another nonce, replayed code, used or
mismatched state, unverified e-mail) is an error page that sets no session.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import BrowserContext
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import create_project
from services.common.models import ApiKey, Project, ProjectMember, User
from tests.conftest import Stack
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Services
from tests.web.browser import screenshot_dir
from tests.web.oidc_provider import OidcProvider, running_provider

CLIENT_ID = "leaflab-web"
PROVIDER_NAME = "Lab SSO"


@dataclass
class SsoStack:
    url: str
    provider: OidcProvider
    project: str


@pytest.fixture(scope="module")
def sso(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, session_factory: sessionmaker[Session]
) -> Iterator[SsoStack]:
    project = f"sso-{uuid.uuid4().hex[:8]}"
    with session_factory() as db, db.begin():
        create_project(db, name=project)
    role_map = {"lab-admins": {"admin": True}, "lab-members": {"projects": {project: "member"}}}
    with running_provider() as provider:
        svc = Services(stack, tmp_path_factory.mktemp("sso"))
        svc.env.update(
            {
                "LEAFLAB_OIDC_ISSUER": provider.url,
                "LEAFLAB_OIDC_CLIENT_ID": CLIENT_ID,
                "LEAFLAB_OIDC_CLIENT_SECRET": "s3cret-of-the-client",
                "LEAFLAB_OIDC_PROVIDER_NAME": PROVIDER_NAME,
                "LEAFLAB_OIDC_ROLE_CLAIM": "groups",
                "LEAFLAB_OIDC_ROLE_MAP": json.dumps(role_map),
            }
        )
        try:
            yield SsoStack(url=svc.api(), provider=provider, project=project)
        finally:
            svc.stop()


def _new_sub(sso: SsoStack, *, verified: bool = True, groups: tuple[str, ...] = ()) -> str:
    """A provider user with a fresh e-mail; returns the address (also its ``sub``)."""
    email = f"sso{uuid.uuid4().hex[:10]}@lab.test"
    sso.provider.set_user(email, email=email, email_verified=verified, groups=list(groups))
    return email


def _to_callback(client: httpx.Client, sso: SsoStack, sub: str, next_path: str = "/jobs") -> str:
    """Starts a sign-in in ``client`` and picks ``sub`` at the provider: the callback URL."""
    start = client.get(f"{sso.url}/login/oidc", params={"next": next_path})
    assert start.status_code == 303, start.text
    authorize = start.headers["location"]
    assert authorize.startswith(f"{sso.provider.url}/oauth2/authorize?")
    picked = client.post(authorize, data={"sub": sub})
    assert picked.status_code == 302, picked.text
    callback = picked.headers["location"]
    assert callback.startswith(f"{sso.url}/login/oidc/callback?")
    return callback


def _no_session(response: httpx.Response, client: httpx.Client) -> None:
    assert "leaflab_session" not in response.headers.get("set-cookie", "")
    assert "leaflab_session" not in client.cookies


def _refused(response: httpx.Response, client: httpx.Client, status: int, says: str) -> None:
    assert response.status_code == status, response.text
    assert 'data-testid="sso-error"' in response.text
    assert says in response.text, response.text
    _no_session(response, client)


def _user(factory: sessionmaker[Session], email: str) -> User | None:
    with factory() as db:
        return db.scalar(select(User).where(User.email == email))


class TestBrowserSignIn:
    def test_first_sign_in_lands_on_jobs_as_the_provisioned_user_with_the_mapped_role(
        self, sso: SsoStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        email = _new_sub(sso, groups=("lab-members", "unmapped-group"))
        page = context.new_page()
        page.goto(f"{sso.url}/jobs")
        assert page.url.startswith(f"{sso.url}/login?next=")
        assert page.locator("#api_key").is_visible()  # the API-key form is still there
        page.get_by_test_id("sso-sign-in").click()
        page.wait_for_url(f"{sso.provider.url}/oauth2/authorize?**")
        page.fill("input[name=sub]", email)
        page.click("button:text('Authorize')")
        page.wait_for_url(f"{sso.url}/jobs")
        assert email in page.inner_text("header")
        page.screenshot(path=str(screenshot_dir() / "sso-signed-in.png"))
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["leaflab_session"]["httpOnly"] is True
        assert cookies["leaflab_session"]["sameSite"] == "Lax"
        assert "leaflab_oidc_state" not in cookies
        assert len(sso.provider.pkce_verified) >= 1  # the code went with its verifier
        # The session is the API's: the page's own fetch of the jobs list works.
        assert page.evaluate("fetch('/v1/jobs').then(r => r.status)") == 200
        with session_factory() as db:
            user = db.scalar(select(User).where(User.email == email))
            assert user is not None and not user.is_admin
            roles = db.execute(
                select(Project.name, ProjectMember.role)
                .join(ProjectMember, ProjectMember.project_id == Project.id)
                .where(ProjectMember.user_id == user.id)
            ).all()
            assert [tuple(r) for r in roles] == [(sso.project, "member")]

    def test_an_unverified_e_mail_gets_the_error_page_and_no_account(
        self, sso: SsoStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        email = _new_sub(sso, verified=False)
        page = context.new_page()
        page.goto(f"{sso.url}/login")
        page.get_by_test_id("sso-sign-in").click()
        page.fill("input[name=sub]", email)
        page.click("button:text('Authorize')")
        page.wait_for_url(f"{sso.url}/login/oidc/callback?**")
        assert "is not verified" in page.get_by_test_id("sso-error").inner_text()
        page.screenshot(path=str(screenshot_dir() / "sso-refused.png"))
        assert "leaflab_session" not in {c["name"] for c in context.cookies()}
        assert _user(session_factory, email) is None


class TestProvisioning:
    def test_an_existing_user_with_that_e_mail_is_signed_in_and_the_admin_claim_maps(
        self, sso: SsoStack, session_factory: sessionmaker[Session]
    ) -> None:
        existing = make_user(session_factory)
        sso.provider.set_user(
            existing.email, email=existing.email, email_verified=True, groups="lab-admins"
        )
        with httpx.Client(timeout=30) as client:
            done = client.get(_to_callback(client, sso, existing.email))
            assert done.status_code == 303 and done.headers["location"] == "/jobs"
            # The session acts as that user, now an admin: the admin API answers it.
            admin_view = client.get(f"{sso.url}/v1/admin/users")
        assert admin_view.status_code == 200 and existing.email in admin_view.text
        with session_factory() as db:
            users = db.scalars(select(User).where(User.email == existing.email)).all()
            assert [u.id for u in users] == [existing.id] and users[0].is_admin
            names = db.scalars(select(ApiKey.name).where(ApiKey.user_id == existing.id)).all()
        assert "web sign-in (SSO)" in names
        # The user's own API key still works for scripts and the CLI.
        with httpx.Client(base_url=sso.url, timeout=30) as cli:
            listed = cli.get("/v1/jobs", headers={"Authorization": f"Bearer {existing.key}"})
        assert listed.status_code == 200

    def test_a_disabled_user_is_refused(
        self, sso: SsoStack, session_factory: sessionmaker[Session]
    ) -> None:
        existing = make_user(session_factory)
        with session_factory() as db, db.begin():
            db.execute(update(User).where(User.id == existing.id).values(disabled=True))
        sso.provider.set_user(existing.email, email=existing.email, email_verified=True)
        with httpx.Client(timeout=30) as client:
            _refused(
                client.get(_to_callback(client, sso, existing.email)), client, 401, "is disabled"
            )

    def test_the_authorization_request_uses_pkce_s256_state_and_nonce(self, sso: SsoStack) -> None:
        with httpx.Client(timeout=30) as client:
            start = client.get(f"{sso.url}/login/oidc")
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert query["response_type"] == ["code"] and query["client_id"] == [CLIENT_ID]
        assert query["code_challenge_method"] == ["S256"]
        assert len(query["code_challenge"][0]) == 43  # base64url(sha256) without padding
        assert query["state"][0] == start.cookies["leaflab_oidc_state"]
        assert len(query["nonce"][0]) >= 32
        assert set(query["scope"][0].split()) >= {"openid", "email"}


class TestTokenRefusals:
    """ID tokens re-signed with the provider's own key (or a foreign one) by the test."""

    @pytest.mark.parametrize(
        ("tamper", "says"),
        [
            ({"aud": "another-app"}, "issued to another application"),
            ({"aud": ["another-app", CLIENT_ID]}, "issued to another application"),
            (
                {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200},
                "the sign-in has expired",
            ),
            ({"nonce": "not-the-one-sent"}, "the ID token was refused"),
            ({"iss": "http://127.0.0.1:1"}, "the ID token was refused"),
            ({"foreign_key": True}, "the ID token was refused"),
        ],
        ids=["wrong_audience", "several_audiences_no_azp", "expired", "nonce", "issuer", "sig"],
    )
    def test_a_bad_id_token_is_refused(
        self,
        sso: SsoStack,
        session_factory: sessionmaker[Session],
        tamper: dict,
        says: str,
    ) -> None:
        email = _new_sub(sso)
        with httpx.Client(timeout=30) as client:
            callback = _to_callback(client, sso, email)
            sso.provider.tamper(**tamper)
            _refused(client.get(callback), client, 401, says)
        assert _user(session_factory, email) is None


class TestFlowRefusals:
    def test_a_replayed_code_is_refused_by_the_provider(self, sso: SsoStack) -> None:
        email = _new_sub(sso)
        with httpx.Client(timeout=30) as client:
            first = _to_callback(client, sso, email)
            assert client.get(first).status_code == 303
            old_code = parse_qs(urlsplit(first).query)["code"][0]
            # A new sign-in in the same browser (fresh state), fed the used code.
            fresh = client.get(f"{sso.url}/login/oidc")
            state = parse_qs(urlsplit(fresh.headers["location"]).query)["state"][0]
            client.cookies.delete("leaflab_session")
            replay = client.get(
                f"{sso.url}/login/oidc/callback", params={"code": old_code, "state": state}
            )
            _refused(replay, client, 401, "refused the code (invalid_grant)")

    def test_a_replayed_callback_finds_its_state_used(self, sso: SsoStack) -> None:
        email = _new_sub(sso)
        with httpx.Client(timeout=30) as client:
            callback = _to_callback(client, sso, email)
            state = client.cookies["leaflab_oidc_state"]
            assert client.get(callback).status_code == 303
            client.cookies.delete("leaflab_session")
            client.cookies.set("leaflab_oidc_state", state, path="/login/oidc")
            _refused(client.get(callback), client, 400, "already used or has expired")

    def test_a_callback_from_another_browsers_sign_in_is_a_state_mismatch(
        self, sso: SsoStack, session_factory: sessionmaker[Session]
    ) -> None:
        email = _new_sub(sso)
        with httpx.Client(timeout=30) as attacker, httpx.Client(timeout=30) as victim:
            callback = _to_callback(attacker, sso, email)
            victim.get(f"{sso.url}/login/oidc")  # the victim has a sign-in of its own
            _refused(victim.get(callback), victim, 400, "state mismatch")
            assert "leaflab_oidc_state" not in victim.cookies  # that sign-in is dropped too
        with httpx.Client(timeout=30) as bare:
            _refused(bare.get(callback), bare, 400, "state mismatch")
        assert _user(session_factory, email) is None

    def test_an_error_from_the_provider_is_shown(self, sso: SsoStack) -> None:
        with httpx.Client(timeout=30) as client:
            start = client.get(f"{sso.url}/login/oidc")
            denied = client.post(start.headers["location"], data={"action": "deny"})
            _refused(client.get(denied.headers["location"]), client, 401, "access_denied")


def test_the_sso_harness_is_a_real_provider_module() -> None:
    # The provider is the PyPI package, not a stub in this tree.
    import oidc_provider_mock

    assert "site-packages" in Path(oidc_provider_mock.__file__).parts


def test_the_login_page_offers_the_provider_beside_the_key_form(
    sso: SsoStack, context: BrowserContext
) -> None:
    page = context.new_page()
    page.goto(f"{sso.url}/login?next=/jobs")
    button = page.get_by_test_id("sso-sign-in")
    assert button.inner_text() == f"Sign in with {PROVIDER_NAME}"
    assert button.get_attribute("href") == "/login/oidc?next=%2Fjobs"
    page.screenshot(path=str(screenshot_dir() / "login-sso.png"))
