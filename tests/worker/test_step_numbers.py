"""Each ledger step has its own number and its real duration.

Steps written at the same moment (a survey's parallel sections, a turn's
parallel tools) used to take ``max(seq) + 1`` from each statement's snapshot and
share a number; a model step is written once, after the call, and showed 0 ms.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, JobStep, User
from services.worker.spine.lease import Lease
from services.worker.spine.recorder import StepWrite, record
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services

WRITERS = 8
STEPS_EACH = 10


@pytest.fixture
def job_id(session_factory: sessionmaker[Session]) -> Iterator[uuid.UUID]:
    with session_factory() as db, db.begin():
        user = User(email=f"seq-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        job = Job(user_id=user.id, kind="survey", input={}, status="running", fence=1)
        db.add(job)
        db.flush()
        ident, user_id = job.id, user.id
    yield ident
    with session_factory() as db, db.begin():
        db.execute(text("DELETE FROM users WHERE id = :id"), {"id": user_id})


def _writer(session_factory: sessionmaker[Session]) -> Engine:
    engine = session_factory.kw["bind"]
    assert isinstance(engine, Engine)
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def test_steps_written_at_once_get_distinct_numbers(
    session_factory: sessionmaker[Session], job_id: uuid.UUID
) -> None:
    writer = _writer(session_factory)
    lease = Lease(job_id=job_id, fence=1, owner="w")
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            start.wait()
            for n in range(STEPS_EACH):
                key = f"survey:write:{worker}:{n}"
                step = StepWrite(key=key, kind="survey", name="write", round_no=3, status="running")
                record(writer, lease, session_id=None, step=step)
                # The same step finishing keeps its number and takes no new one.
                done = StepWrite(
                    key=key,
                    kind="survey",
                    name="write",
                    round_no=3,
                    status="succeeded",
                    count_run=False,
                )
                record(writer, lease, session_id=None, step=done)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    with session_factory() as db:
        seqs = db.scalars(select(JobStep.seq).where(JobStep.job_id == job_id)).all()
        top = db.scalar(select(Job.step_seq).where(Job.id == job_id))
    assert sorted(seqs) == list(range(1, WRITERS * STEPS_EACH + 1))
    assert top == WRITERS * STEPS_EACH


def test_a_step_written_after_its_work_keeps_when_the_work_began(
    session_factory: sessionmaker[Session], job_id: uuid.UUID
) -> None:
    began = datetime.now(UTC) - timedelta(seconds=3)
    step = StepWrite(
        key="llm:0", kind="llm", name="m", round_no=0, status="succeeded", started_at=began
    )
    record(
        _writer(session_factory),
        Lease(job_id=job_id, fence=1, owner="w"),
        session_id=None,
        step=step,
    )
    with session_factory() as db:
        row = db.scalars(select(JobStep).where(JobStep.job_id == job_id)).one()
    assert row.finished_at is not None
    assert row.started_at == began
    assert (row.finished_at - row.started_at) >= timedelta(seconds=3)


def test_a_model_step_shows_how_long_the_call_took(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.simulator({"latency_ms": 1500, "replies": [{"content": "a considered answer"}]})
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "hi"}).json()[
        "job_id"
    ]
    assert wait_job(client, job_id, timeout_s=60)["status"] == "succeeded"
    (step,) = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    took = datetime.fromisoformat(step["finished_at"]) - datetime.fromisoformat(step["started_at"])
    assert step["kind"] == "llm" and took >= timedelta(seconds=1.4)
