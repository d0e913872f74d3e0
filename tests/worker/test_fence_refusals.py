"""A worker whose lease was taken over (its fence is stale) changes nothing.

The partition and GC-pause tests (tests/faults/) show this end to end in minutes;
these pin the two places the fence is checked, in seconds: the ledger's step
write (``recorder.record``) and an effect outside Postgres (``fenced_effect``, a
workspace edit), so the mutation run (tests/mutations/catalog.py) can break each.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Job, JobStep, User
from services.worker.spine.lease import Lease, LeaseLost, fenced_effect
from services.worker.spine.recorder import StepWrite, UsageDelta, record

CURRENT_FENCE = 7


@pytest.fixture
def job_id(session_factory: sessionmaker[Session]) -> Iterator[uuid.UUID]:
    """A running job whose lease is now held under fence 7 (a takeover's)."""
    with session_factory() as db, db.begin():
        user = User(email=f"fence-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        chat = ChatSession(user_id=user.id)
        db.add(chat)
        db.flush()
        job = Job(
            user_id=user.id,
            session_id=chat.id,
            kind="turn",
            input={"content": "go"},
            status="running",
            fence=CURRENT_FENCE,
        )
        db.add(job)
        db.flush()
        ident, user_id = job.id, user.id
    yield ident
    with session_factory() as db, db.begin():
        db.execute(text("DELETE FROM users WHERE id = :id"), {"id": user_id})


def _stale(job_id: uuid.UUID) -> Lease:
    return Lease(job_id=job_id, fence=CURRENT_FENCE - 1, owner="stale-worker")


def test_a_stale_step_write_is_refused_and_leaves_no_step(
    session_factory: sessionmaker[Session], job_id: uuid.UUID
) -> None:
    engine = session_factory.kw["bind"]
    assert isinstance(engine, Engine)
    writer = engine.execution_options(isolation_level="AUTOCOMMIT")
    lease = _stale(job_id)
    step = StepWrite(key="tool:1:write", kind="tool", name="write_file", round_no=1, status="ok")

    with pytest.raises(LeaseLost, match=f"fence {CURRENT_FENCE - 1} < {CURRENT_FENCE}"):
        record(writer, lease, session_id=None, step=step, usage=UsageDelta(input_tokens=50))

    assert lease.lost.is_set()
    with session_factory() as db:
        steps = db.scalar(select(func.count()).select_from(JobStep).where(JobStep.job_id == job_id))
        tokens = db.scalar(select(Job.input_tokens).where(Job.id == job_id))
    assert (steps, tokens) == (0, 0)


def test_a_stale_workers_edit_never_touches_the_workspace(
    session_factory: sessionmaker[Session], job_id: uuid.UUID, tmp_path: Path
) -> None:
    target = tmp_path / "notes.md"
    target.write_text("the rescuer's text\n")
    lease = _stale(job_id)

    with (
        pytest.raises(LeaseLost),
        fenced_effect(session_factory, lease, hold_limit_s=5),
    ):
        target.write_text("the stale worker's text\n")

    assert target.read_text() == "the rescuer's text\n"
    assert lease.lost.is_set()
