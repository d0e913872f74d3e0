"""/login/oidc and its callback: "Sign in with <provider>" for the web pages.

The start sets a one-time state (Redis, :mod:`.pending`) and the same value in a
cookie of this browser, then sends the browser to the provider. The callback
finishes only when the state in the URL is the cookie's *and* still unused — a
link crafted elsewhere (login CSRF), a replayed callback or a stale tab finds no
sign-in to finish — then exchanges the code (with the PKCE verifier), checks the
ID token and signs the user in with the ordinary session cookie. Every refusal
is one error page saying why, and sets no session.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from services.api.deps import DbSession, StateDep
from services.api.state import AppState
from services.api.web.cookie_auth import web_sessions
from services.api.web.login import local_target, over_tls, set_session_cookie
from services.api.web.oidc.accounts import session_key, signed_in_user
from services.api.web.oidc.pending import PENDING_TTL_S, PendingSignIns
from services.api.web.oidc.provider import (
    SignInRefused,
    authorization_url,
    discover,
    exchange_code,
    verified_claims,
)
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)

STATE_COOKIE = "leaflab_oidc_state"
STATE_COOKIE_PATH = "/login/oidc"
CALLBACK_PATH = "/login/oidc/callback"


def _redirect_uri(request: Request) -> str:
    # Behind a TLS-terminating proxy the provider must send the browser back over https.
    base = str(request.base_url).rstrip("/")
    if over_tls(request) and base.startswith("http://"):
        base = "https://" + base.removeprefix("http://")
    return base + CALLBACK_PATH


def _refused(request: Request, state: AppState, message: str, status: int) -> Response:
    response = render(
        request,
        "sso_error.html",
        None,
        status_code=status,
        error=message,
        provider_name=state.settings.oidc_provider_name,
    )
    response.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH)
    return response


@router.get("/login/oidc", response_class=HTMLResponse)
def start_sign_in(request: Request, state: StateDep, next: str = "/") -> Response:  # noqa: A002
    settings = state.settings
    if settings.oidc_issuer is None:
        return render(request, "not_found.html", None, status_code=404)
    try:
        metadata = discover(settings)
    except SignInRefused as refused:
        return _refused(request, state, str(refused), 502)
    token, pending = PendingSignIns(state.redis).begin(next_url=local_target(next))
    url = authorization_url(
        settings,
        metadata,
        redirect_uri=_redirect_uri(request),
        state=token,
        nonce=pending.nonce,
        code_verifier=pending.code_verifier,
    )
    response = RedirectResponse(url, status_code=303)
    # Lax, not Strict: the provider's redirect back is a cross-site top-level GET.
    response.set_cookie(
        STATE_COOKIE,
        token,
        httponly=True,
        samesite="lax",
        secure=over_tls(request),
        path=STATE_COOKIE_PATH,
        max_age=PENDING_TTL_S,
    )
    return response


@router.get(CALLBACK_PATH, response_class=HTMLResponse)
def finish_sign_in(
    request: Request,
    db: DbSession,
    state: StateDep,
    code: str = "",
    error: str = "",
) -> Response:
    settings = state.settings
    if settings.oidc_issuer is None:
        return render(request, "not_found.html", None, status_code=404)
    returned = request.query_params.get("state", "")
    if error:
        return _refused(request, state, f"the sign-in provider said: {error[:200]}", 401)
    expected = request.cookies.get(STATE_COOKIE, "")
    if not expected or not returned or not hmac.compare_digest(expected, returned):
        return _refused(
            request, state, "this sign-in was not started in this browser (state mismatch)", 400
        )
    pending = PendingSignIns(state.redis).take(returned)
    if pending is None:
        return _refused(request, state, "this sign-in was already used or has expired", 400)
    try:
        metadata = discover(settings)
        token = exchange_code(
            settings,
            metadata,
            code=code,
            redirect_uri=_redirect_uri(request),
            code_verifier=pending.code_verifier,
        )
        claims = verified_claims(settings, metadata, token=token, nonce=pending.nonce)
        user = signed_in_user(
            db, claims=claims, role_claim=settings.oidc_role_claim, role_map=settings.oidc_role_map
        )
    except SignInRefused as refused:
        return _refused(request, state, str(refused), 401)
    key = session_key(db, user=user, ttl_s=settings.web_session_ttl_s)
    db.commit()  # the key must exist before a session names it
    session_token, _ = web_sessions(state).create(key.id)
    response = RedirectResponse(local_target(pending.next_url), status_code=303)
    set_session_cookie(response, request, state, session_token)
    response.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH)
    return response
