"""Actions that must wait for the request's commit (sending a Celery message).

A service that creates or wakes a job registers the send here; the request
boundary (:func:`services.api.deps.get_db`) runs the actions only after its
commit succeeded, so a worker never hears of a row it cannot read yet, and a
rolled-back request sends nothing. A lost send is repaired by the sweeper.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

_KEY = "leaflab.after_commit"


def after_commit(db: Session, action: Callable[[], None]) -> None:
    """Run ``action`` once this request's transaction has committed."""
    db.info.setdefault(_KEY, []).append(action)


def run_after_commit(db: Session) -> None:
    """Called by the request boundary right after a successful commit."""
    actions: list[Callable[[], None]] = db.info.pop(_KEY, [])
    for action in actions:
        action()


def discard_after_commit(db: Session) -> None:
    """Called after a rollback: nothing the request planned to send may be sent."""
    db.info.pop(_KEY, None)
