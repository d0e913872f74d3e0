"""kill -9 of a worker in the middle of a model call: the sweeper gives its reservation
back and the job resumes on another worker, with the budget exactly accounted."""

from __future__ import annotations

import time
import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import BudgetReservation, Job, SpendRecord
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.worker.budget.builders import budget_row, make_budget

SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
        # Long enough to kill the worker while its reservation is held.
        {"content": "done", "delay_ms": 3000},
    ]
}


def _held(factory: sessionmaker[Session], job_id: str) -> int:
    with factory() as db:
        return int(
            db.scalar(
                select(func.count())
                .select_from(BudgetReservation)
                .where(BudgetReservation.job_id == uuid.UUID(job_id))
            )
            or 0
        )


def test_kill_9_mid_call_releases_the_reservation_and_the_job_resumes(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    sim = services.simulator()
    url = services.api()
    victim = services.worker("victim")
    user = make_user(session_factory)
    budget_id = make_budget(session_factory, user_id=user.id, usd="5")
    client = client_for(url, user)
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], SCRIPT)
    job_id = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "go"}).json()[
        "job_id"
    ]
    # Wait for the second call's reservation (the first one settled after its call).
    deadline = time.monotonic() + 60
    with session_factory() as db:
        while True:
            assert time.monotonic() < deadline, "the second call never started"
            spent = db.scalar(
                select(func.count()).select_from(SpendRecord).where(SpendRecord.user_id == user.id)
            )
            if spent == 1 and _held(session_factory, job_id) == 1:
                break
            time.sleep(0.05)
    victim.kill9()
    held = budget_row(session_factory, budget_id)
    assert held.reserved_usd > 0  # a dead worker cannot settle: the reservation is left

    services.worker("rescuer")
    job = wait_job(client, job_id, timeout_s=60)
    assert job["status"] == "succeeded", job
    assert job["attempts"] >= 2
    with session_factory() as db:
        row = db.get(Job, uuid.UUID(job_id))
        assert row is not None
        spend_usd = db.scalar(
            select(func.sum(SpendRecord.cost_usd)).where(SpendRecord.user_id == user.id)
        )
    after = budget_row(session_factory, budget_id)
    # The orphan was released (nothing stays reserved) and spend is what the ledger says.
    assert after.reserved_usd == 0 and after.reserved_tokens == 0
    assert _held(session_factory, job_id) == 0
    assert after.spent_usd == spend_usd
