"""The spine dispatches a slice by the job's kind through the registry the worker
builds (``runtime/runners.py``): every kind has a runner, and a job whose kind this
worker was not built with fails with that kind named instead of retrying forever."""

from __future__ import annotations

import time

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import TERMINAL, JobStatus
from services.common.job_states import JOB_KINDS
from services.common.models import Job
from services.worker.runtime.runners import job_runners
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services


def test_every_job_kind_has_a_runner() -> None:
    assert sorted(job_runners()) == sorted(JOB_KINDS)


def test_a_kind_no_runner_knows_fails_the_job_naming_it(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    with session_factory() as db, db.begin():
        # A row as a newer API that knows a kind this worker does not would write it;
        # the sweeper finds it (queued, never sent) and sends its advance.
        job = Job(user_id=user.id, kind="hologram", input={})
        db.add(job)
        db.flush()
        job_id = str(job.id)
    services.worker()

    # Read from its row: the API's job schema knows only the kinds it was built with.
    deadline = time.monotonic() + 90
    while True:
        with session_factory() as db:
            row = db.execute(
                text("SELECT status, error, attempts FROM jobs WHERE id = :id"), {"id": job_id}
            ).one()
        if row.status in TERMINAL or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    assert row.status == JobStatus.FAILED, row
    assert row.error == "this worker runs no job of kind 'hologram'", row
    # Failed on its first slice, not retried until the attempt limit.
    assert row.attempts == 1, row


def test_a_turn_whose_session_was_deleted_fails_saying_so(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    client = client_for(services.api(), user)
    with session_factory() as db, db.begin():
        job = Job(user_id=user.id, kind="turn", input={"content": "hello"})
        db.add(job)
        db.flush()
        job_id = str(job.id)
    services.worker()

    done = wait_job(client, job_id, timeout_s=90)

    assert done["status"] == "failed", done
    assert done["error"] == "this turn's chat session was deleted before it ran", done
