"""FastAPI dependencies: app state, a DB session per request, the calling user."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.orm import Session

from services.api.api_keys import CALLER_INFO, Caller, KeyRefused, authenticate, legacy_hash
from services.api.rate_limits import REFUSAL_MESSAGES, RateLimiter, caller_buckets
from services.api.state import AppState
from services.api.transaction import discard_after_commit, run_after_commit
from services.api.web.cookie_auth import cookie_caller
from services.common.contracts.errors import ServiceError
from services.common.models import User


# Dependencies that never block are ``async def``: FastAPI runs a plain ``def``
# dependency on a threadpool thread, a hand-off that cost more CPU per request
# than the dependency itself (bench/RESULTS.md, 2026-12-07 "apicpu").
async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.leaflab
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_db(state: StateDep) -> Iterator[Session]:
    """One transaction per request: the request boundary commits, services only flush.

    Celery messages the services planned (``transaction.after_commit``) are sent
    only after the commit succeeded.
    """
    session = state.session_factory()
    try:
        yield session
        session.commit()
    except Exception:
        session.rollback()
        discard_after_commit(session)
        raise
    finally:
        session.close()
    run_after_commit(session)


# scope="function": commit runs when the endpoint returns, before the response is
# sent, so a client never sees a 2xx for data another request cannot yet read.
DbSession = Annotated[Session, Depends(get_db, scope="function")]


def hash_key(key: str) -> str:
    """The unsalted hash of keys stored before salts existed (see ``api_keys``)."""
    return legacy_hash(key)


# Declares the bearer scheme in OpenAPI; errors stay ours (auto_error=False).
bearer_scheme = HTTPBearer(auto_error=False, description="An API key: `Bearer lf_…`")


def current_caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    db: DbSession,
    state: StateDep,
) -> Caller:
    """The authenticated caller, after its rate limits (key, user, project); 401 or
    429 otherwise.

    The caller is also kept in ``db.info`` so the ownership rules
    (``services.api.access``) see the key's project scope with every lookup.
    """
    token = credentials.credentials.strip() if credentials else ""
    caller = authenticate_request(request, token, db, state)
    decision = RateLimiter(state.redis).take(caller_buckets(state.settings, caller))
    if not decision.allowed:
        why = REFUSAL_MESSAGES[decision.scope or "key"]
        raise ServiceError(
            429,
            "rate_limited",
            f"{why}; retry in {decision.retry_after_s} s",
            headers={"Retry-After": str(decision.retry_after_s)},
            details={"limit": decision.scope},
        )
    db.info[CALLER_INFO] = caller
    return caller


def authenticate_request(request: Request, token: str, db: Session, state: AppState) -> Caller:
    """Who the request acts as, from its bearer ``token`` or else its session cookie;
    401 (ServiceError) when neither stands for an active key of an active user.

    Open event streams call this again while they run (``events/stream_access``),
    so a key revoked, expired or disabled, or a browser session logged out, ends
    them as it would refuse a new request.
    """
    if token:
        try:
            return authenticate(db, key=token)
        except KeyRefused as refused:
            raise ServiceError(401, "unauthorized", str(refused)) from None
    # No key: a browser's session cookie (CSRF-checked on writes), or 401.
    return cookie_caller(request, db, state)


def bearer_token(request: Request) -> str:
    """The request's bearer key as ``bearer_scheme`` reads it ("" when none)."""
    scheme, credentials = get_authorization_scheme_param(request.headers.get("Authorization"))
    return credentials.strip() if scheme.lower() == "bearer" else ""


CurrentCaller = Annotated[Caller, Depends(current_caller)]


async def current_user(caller: CurrentCaller) -> User:
    return caller.user


CurrentUser = Annotated[User, Depends(current_user)]


async def admin_user(caller: CurrentCaller) -> User:
    """An admin using an unscoped key: a key limited to one project is never global."""
    if not caller.user.is_admin:
        raise ServiceError(403, "forbidden", "admin only")
    if caller.project_id is not None:
        raise ServiceError(403, "forbidden", "a key scoped to a project cannot use admin routes")
    return caller.user


AdminUser = Annotated[User, Depends(admin_user)]
