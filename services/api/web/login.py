"""/login and /logout: an API key in, a session cookie out.

Login itself is CSRF-protected with a double-submit token (a cookie set by the form
page and the same value in the form), so another site cannot log a browser into an
attacker's account. The session cookie is HttpOnly, SameSite=Lax, and Secure whenever
the request came over TLS (directly or through a proxy that says so).
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from services.api.api_keys import KeyRefused, authenticate
from services.api.deps import DbSession, StateDep
from services.api.state import AppState
from services.api.web.cookie_auth import SESSION_COOKIE, session_of, web_sessions
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)

LOGIN_CSRF_COOKIE = "leaflab_login_csrf"
MAX_KEY_CHARS = 200


def over_tls(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "")
    return request.url.scheme == "https" or forwarded.split(",")[0].strip() == "https"


def local_target(next_url: str | None) -> str:
    """Only a path on this site: never ``//host`` or ``https://…`` (an open redirect)."""
    if not next_url or not next_url.startswith("/") or next_url.startswith("//"):
        return "/"
    if "\\" in next_url or any(ord(c) < 32 for c in next_url):
        return "/"
    return next_url


def set_form_cookie(response: Response, request: Request, name: str, token: str, path: str) -> None:
    """The double-submit CSRF cookie of an unauthenticated form (login, invite)."""
    response.set_cookie(
        name,
        token,
        httponly=True,
        samesite="strict",
        secure=over_tls(request),
        path=path,
        max_age=3600,
    )


def set_session_cookie(response: Response, request: Request, state: AppState, token: str) -> None:
    """The web session cookie: HttpOnly, SameSite=Lax, Secure over TLS."""
    response.set_cookie(
        SESSION_COOKIE,
        token,
        httponly=True,
        samesite="lax",
        secure=over_tls(request),
        path="/",
        max_age=state.settings.web_session_ttl_s,
    )


def _login_page(
    request: Request, state: AppState, *, error: str | None, next_url: str, status: int
) -> Response:
    token = secrets.token_urlsafe(24)
    target = local_target(next_url)
    settings = state.settings
    response = render(
        request,
        "login.html",
        None,
        status_code=status,
        login_csrf=token,
        error=error,
        next_url=target,
        # Single sign-on, when configured (services/api/web/oidc).
        sso_name=settings.oidc_provider_name if settings.oidc_issuer else None,
        sso_href=f"/login/oidc?next={quote(target, safe='')}",
    )
    set_form_cookie(response, request, LOGIN_CSRF_COOKIE, token, "/login")
    return response


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, state: StateDep, next: str = "/") -> Response:  # noqa: A002
    return _login_page(request, state, error=None, next_url=next, status=200)


@router.post("/login")
def login(
    request: Request,
    db: DbSession,
    state: StateDep,
    api_key: Annotated[str, Form(max_length=MAX_KEY_CHARS)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/",  # noqa: A002 - the form field's name
) -> Response:
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not expected or not hmac.compare_digest(expected, csrf_token):
        return _login_page(
            request, state, error="The form expired; please try again.", next_url=next, status=403
        )
    try:
        caller = authenticate(db, key=api_key.strip())
    except KeyRefused as refused:
        return _login_page(request, state, error=str(refused), next_url=next, status=401)
    token, _ = web_sessions(state).create(caller.key_id)
    response = RedirectResponse(local_target(next), status_code=303)
    set_session_cookie(response, request, state, token)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
def logout(
    request: Request,
    state: StateDep,
    csrf_token: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    found = session_of(request, state)
    if found is not None:
        token, session = found
        if not hmac.compare_digest(session.csrf, csrf_token):
            return HTMLResponse("<h1>403 — bad CSRF token</h1>", status_code=403)
        web_sessions(state).delete(token)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
