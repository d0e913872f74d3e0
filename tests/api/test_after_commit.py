"""Celery sends a request plans run only after its commit; a rolled-back request sends nothing.

Driven through the request boundary itself (``deps.get_db``) on the real
database: a worker must never hear of a job row it cannot read yet, nor of one
that was rolled back.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.api.deps import get_db
from services.api.transaction import after_commit
from services.common.models import User


def _request(factory: sessionmaker[Session], body: Any) -> list[bool]:
    """Run ``body(db)`` as one request; returns, per planned send, whether the row
    it announces was visible to another connection when the send ran."""
    seen: list[bool] = []
    boundary = get_db(SimpleNamespace(session_factory=factory))  # type: ignore[arg-type]
    db = next(boundary)
    try:
        email = body(db)

        def send() -> None:
            with factory() as other:
                seen.append(other.scalar(select(User).where(User.email == email)) is not None)

        after_commit(db, send)
    except Exception as exc:
        with pytest.raises(type(exc)):
            boundary.throw(exc)
        return seen
    with pytest.raises(StopIteration):
        next(boundary)
    return seen


def _add_user(db: Session) -> str:
    email = f"after-commit-{uuid.uuid4().hex[:8]}@example.org"
    db.add(User(email=email))
    db.flush()
    return email


def test_planned_send_runs_after_the_commit_and_sees_the_row(
    session_factory: sessionmaker[Session],
) -> None:
    assert _request(session_factory, _add_user) == [True]


def test_rolled_back_request_sends_nothing(session_factory: sessionmaker[Session]) -> None:
    sent: list[str] = []

    def failing(db: Session) -> str:
        _add_user(db)
        after_commit(db, lambda: sent.append("advance"))
        raise RuntimeError("the handler failed after planning a send")

    assert _request(session_factory, failing) == []
    assert sent == []
