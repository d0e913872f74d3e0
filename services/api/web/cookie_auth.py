"""The API's second way in: a browser session cookie, with CSRF checks on writes.

Pages call the same JSON API as scripts do. A request without a bearer key may
present the session cookie instead; then every state-changing method must carry the
session's CSRF token in ``X-CSRF-Token`` (a cross-site page cannot read it), and an
``Origin`` header, when the browser sends one, must be this site's own.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from fastapi import Request
from sqlalchemy.orm import Session

from services.api.api_keys import Caller, KeyRefused, authenticate_key_id
from services.api.state import AppState
from services.api.web.session_store import WebSession, WebSessions
from services.common.contracts.errors import ServiceError

SESSION_COOKIE = "leaflab_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def web_sessions(state: AppState) -> WebSessions:
    return WebSessions(state.redis, ttl_s=state.settings.web_session_ttl_s)


def session_of(request: Request, state: AppState) -> tuple[str, WebSession] | None:
    token = request.cookies.get(SESSION_COOKIE, "")
    session = web_sessions(state).lookup(token) if token else None
    return (token, session) if session else None


def same_origin(request: Request) -> bool:
    """False only when the browser names another site as the request's origin."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null" and request.method in SAFE_METHODS:
        return True
    parts = urlsplit(origin)
    host = request.headers.get("host", "")
    return bool(parts.netloc) and parts.netloc == host


def csrf_ok(request: Request, session: WebSession, presented: str | None) -> bool:
    if request.method in SAFE_METHODS:
        return True
    return bool(presented) and hmac.compare_digest(presented or "", session.csrf)


def cookie_caller(request: Request, db: Session, state: AppState) -> Caller:
    found = session_of(request, state)
    if found is None:
        raise ServiceError(
            401, "unauthorized", "missing API key: send 'Authorization: Bearer lf_…'"
        )
    _, session = found
    if not same_origin(request):
        raise ServiceError(403, "csrf_failed", "cross-site request refused")
    if not csrf_ok(request, session, request.headers.get(CSRF_HEADER)):
        raise ServiceError(403, "csrf_failed", f"missing or wrong {CSRF_HEADER} header")
    try:
        return authenticate_key_id(db, key_id=session.key_id)
    except KeyRefused as refused:
        raise ServiceError(401, "unauthorized", str(refused)) from None
