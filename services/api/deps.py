"""FastAPI dependencies: app state, a DB session per request, the calling user."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from services.api.errors import ApiError
from services.api.state import AppState
from services.api.transaction import discard_after_commit, run_after_commit
from services.common.models import ApiKey, User


def get_state(request: Request) -> AppState:
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
    return hashlib.sha256(key.encode()).hexdigest()


# Declares the bearer scheme in OpenAPI; errors stay ours (auto_error=False).
bearer_scheme = HTTPBearer(auto_error=False, description="An API key: `Bearer lf_…`")


def current_user(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    db: DbSession,
) -> User:
    token = credentials.credentials.strip() if credentials else ""
    if not token:
        raise ApiError(401, "unauthorized", "missing API key: send 'Authorization: Bearer lf_…'")
    row = db.execute(
        select(ApiKey, User)
        .join(User, User.id == ApiKey.user_id)
        .where(ApiKey.key_hash == hash_key(token))
    ).first()
    if row is None or row.ApiKey.revoked_at is not None or row.User.disabled:
        raise ApiError(401, "unauthorized", "invalid or revoked API key")
    db.execute(
        update(ApiKey).where(ApiKey.id == row.ApiKey.id).values(last_used_at=datetime.now(UTC))
    )
    user: User = row.User
    return user


CurrentUser = Annotated[User, Depends(current_user)]


def admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise ApiError(403, "forbidden", "admin only")
    return user


AdminUser = Annotated[User, Depends(admin_user)]
