"""API service settings."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, model_validator

from services.common.settings import CommonSettings


class OidcGrant(BaseModel):
    """What one value of the SSO role claim grants: admin, and roles in named projects."""

    admin: bool = False
    projects: dict[str, Literal["owner", "member"]] = Field(default_factory=dict)


class ApiSettings(CommonSettings):
    host: str = "127.0.0.1"
    port: int = 8000
    # SSE: a comment line at least this often, so proxies keep quiet streams open.
    sse_ping_s: float = 15.0
    # An open event stream re-checks its caller this often (and at least at every
    # ping): a revoked/expired key, a disabled user, a logged-out browser session or
    # lost project membership ends it with an ``access_revoked`` event.
    sse_access_check_s: float = Field(default=5.0, gt=0)
    max_turns_default: int = 30
    # Limits on what clients send.
    max_message_chars: int = 200_000
    max_request_bytes: int = 2_000_000
    # Every Redis call of the API fails after this long rather than hang; SSE
    # reads block for less (services.common.redis_client.max_block_ms).
    redis_socket_timeout_s: float = 5.0
    # Token buckets in Redis, shared by every API process (services/api/rate_limits.py):
    # per key, on average this many requests per second, up to ``rate_limit_burst``
    # at once (0: every limit off).
    rate_limit_per_s: float = 20.0
    rate_limit_burst: int = 200
    # Every key of one user together (None: the per-key figures, so a second key
    # adds nothing); 0 turns the per-user limit off.
    rate_limit_user_per_s: float | None = None
    rate_limit_user_burst: int | None = None
    # Every key scoped to one project together (None: 5x the per-key figures).
    rate_limit_project_per_s: float | None = None
    rate_limit_project_burst: int | None = None
    # Browser sessions (the web pages): how long a login lasts.
    web_session_ttl_s: int = 12 * 3600
    # The Jaeger UI's base URL (e.g. http://jaeger:16686): job pages link each trace
    # there; unset, no link is shown.
    jaeger_ui_url: str | None = None
    # The model is Leaflab's simulator (`leaflab up` sets it when it serves one): the chat
    # page says its answers are simulated and how to connect a real model.
    model_simulated: bool = False
    # Schedules (services/api/schedules): how often each API process looks for a due
    # slot (a slot runs within about this long of its time), and the shortest time
    # allowed between two slots of one schedule (a cron firing more often is refused).
    schedule_poll_s: float = Field(default=15.0, gt=0)
    schedule_min_interval_s: int = Field(default=300, ge=60)
    # Single sign-on (services/api/web/oidc): set the issuer (and the client's id) and
    # the login page offers "Sign in with <oidc_provider_name>" beside the API-key form.
    # The issuer is the operator's own choice, so its fetches are not SSRF-guarded; it
    # must be https, or http on loopback (a test's provider, a local Keycloak).
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: SecretStr | None = None
    oidc_provider_name: str = "SSO"
    # The ID-token claim whose value(s) (a string or a list of strings) decide roles,
    # and what each value grants, as JSON (LEAFLAB_OIDC_ROLE_MAP):
    # {"lab-admins": {"admin": true}, "lab-a": {"projects": {"Lab A": "member"}}}.
    # Grants are added at every sign-in; nothing is taken away (admins do that).
    oidc_role_claim: str = "groups"
    oidc_role_map: dict[str, OidcGrant] = Field(default_factory=dict)
    oidc_timeout_s: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _check_oidc(self) -> ApiSettings:
        if self.oidc_issuer is None:
            return self
        if not self.oidc_client_id:
            raise ValueError("LEAFLAB_OIDC_ISSUER is set: set LEAFLAB_OIDC_CLIENT_ID too")
        parts = urlsplit(self.oidc_issuer)
        loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
        if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
            raise ValueError("LEAFLAB_OIDC_ISSUER must be https (http only on loopback)")
        return self
