"""A model reply's ledger write settles its call: spend, budgets and job usage change together.

The turn records an answered call and settles its budget reservation in one
statement (``record(..., settle=...)``). What a member and an admin see: the
budget's reservation is given back and the real cost charged, one spend row,
and the job's cost — all at once. A worker whose lease was taken over still
pays for the call it made, but writes no step.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import BudgetReservation, Job, JobStep, SpendRecord
from services.worker.spine.budget.reservation import (
    Ask,
    Payer,
    PendingSettlement,
    Settlement,
    reserve_budget,
)
from services.worker.spine.lease import Lease, LeaseLost, acquire
from services.worker.spine.recorder import StepWrite, UsageDelta, record
from tests.fixtures.builders import make_user, queued_jobs
from tests.worker.budget.builders import budget_row, make_budget

ASK = Ask(usd=Decimal("1"), tokens=100, fast_usd=Decimal("0.1"), fast_tokens=100)
COST = Decimal("0.25")


@pytest.fixture
def jobs_left(session_factory: sessionmaker[Session]) -> Iterator[list[uuid.UUID]]:
    """Jobs a test leaves running are closed: another suite's sweeper must not pick
    up a session-less 'running' turn whose lease ran out."""
    ids: list[uuid.UUID] = []
    yield ids
    with session_factory() as db, db.begin():
        db.execute(
            update(Job)
            .where(Job.id.in_(ids))
            .values(status="cancelled", lease_owner=None, lease_until=None)
        )


def _running(
    engine: Engine, factory: sessionmaker[Session], left: list[uuid.UUID]
) -> tuple[Lease, Job, uuid.UUID]:
    user = make_user(factory)
    budget = make_budget(factory, user_id=user.id, usd="10")
    (job_id,) = queued_jobs(factory, user.id, 1)
    left.append(job_id)
    lease = acquire(engine, job_id=job_id, owner="test", ttl_s=60)
    assert lease is not None
    with factory() as db:
        job = db.get(Job, job_id)
        assert job is not None
        db.expunge(job)
    return lease, job, budget


def _answer(writer: Engine, lease: Lease, job: Job, key: str) -> PendingSettlement:
    """Reserve for a call, then record its reply with the settlement."""
    payer = Payer(user_id=job.user_id, project_id=None, job_id=job.id, fence=lease.fence)
    held = reserve_budget(writer, payer=payer, ask=ASK, soft_default=1.0)
    assert held.ok and held.id is not None
    settle = PendingSettlement(
        payer=payer,
        reservation=held,
        settlement=Settlement(cost_usd=COST, input_tokens=10, output_tokens=5, model="m"),
    )
    record(
        writer,
        lease,
        session_id=job.session_id,
        step=StepWrite(key=key, kind="llm", name="m", round_no=0, status="succeeded"),
        usage=UsageDelta(input_tokens=10, output_tokens=5, cost_usd=COST),
        settle=settle,
    )
    return settle


def _counts(factory: sessionmaker[Session], job_id: uuid.UUID) -> tuple[int, int, int, Decimal]:
    with factory() as db:
        spends = db.scalar(select(func.count()).where(SpendRecord.job_id == job_id))
        held = db.scalar(select(func.count()).where(BudgetReservation.job_id == job_id))
        steps = db.scalar(select(func.count()).where(JobStep.job_id == job_id))
        cost = db.scalar(select(Job.cost_usd).where(Job.id == job_id))
    return int(spends or 0), int(held or 0), int(steps or 0), Decimal(cost or 0)


def test_the_reply_and_its_charge_are_written_together(
    engine: Engine, session_factory: sessionmaker[Session], jobs_left: list[uuid.UUID]
) -> None:
    writer = engine.execution_options(isolation_level="AUTOCOMMIT")
    lease, job, budget = _running(engine, session_factory, jobs_left)
    _answer(writer, lease, job, "llm:0")
    row = budget_row(session_factory, budget)
    assert (row.reserved_usd, row.reserved_tokens) == (0, 0)
    assert (row.spent_usd, row.spent_tokens) == (COST, 15)
    assert _counts(session_factory, job.id) == (1, 0, 1, COST)


def test_a_superseded_worker_pays_for_its_call_but_writes_no_step(
    engine: Engine, session_factory: sessionmaker[Session], jobs_left: list[uuid.UUID]
) -> None:
    writer = engine.execution_options(isolation_level="AUTOCOMMIT")
    lease, job, budget = _running(engine, session_factory, jobs_left)
    # Another worker took the job over while this one's call was in flight.
    with session_factory() as db, db.begin():
        db.execute(update(Job).where(Job.id == job.id).values(fence=Job.fence + 1))
    with pytest.raises(LeaseLost):
        _answer(writer, lease, job, "llm:0")
    row = budget_row(session_factory, budget)
    assert (row.reserved_usd, row.spent_usd) == (0, COST)
    # Charged to the spend ledger; no step, and the job's usage is the new owner's to write.
    assert _counts(session_factory, job.id) == (1, 0, 0, Decimal(0))
    assert lease.lost.is_set()


def test_an_estimated_call_is_marked_on_the_job_the_spend_row_and_the_listings(
    engine: Engine, session_factory: sessionmaker[Session], jobs_left: list[uuid.UUID]
) -> None:
    from services.api.admin.budgets.service import spend_report
    from services.cli.jobs_list_cmd import job_row

    writer = engine.execution_options(isolation_level="AUTOCOMMIT")
    lease, job, _ = _running(engine, session_factory, jobs_left)
    payer = Payer(user_id=job.user_id, project_id=None, job_id=job.id, fence=lease.fence)
    held = reserve_budget(writer, payer=payer, ask=ASK, soft_default=1.0)
    settle = PendingSettlement(
        payer=payer,
        reservation=held,
        settlement=Settlement(cost_usd=COST, input_tokens=10, model="m-est", estimated=True),
    )
    record(
        writer,
        lease,
        session_id=job.session_id,
        step=StepWrite(key="llm:0", kind="llm", name="m", round_no=0, status="succeeded"),
        usage=UsageDelta(input_tokens=10, cost_usd=COST, estimated=True),
        settle=settle,
    )
    with session_factory() as db:
        stored = db.get(Job, job.id)
        assert stored is not None and stored.usage_estimated
        spend = db.scalars(select(SpendRecord).where(SpendRecord.job_id == job.id)).one()
        assert spend.estimated
        report = spend_report(db, by="model", since=None)
    (row,) = [i for i in report.items if i.key == "m-est"]
    assert row.estimated_calls == 1
    listed = job_row(
        {
            "id": "j",
            "kind": "turn",
            "status": "succeeded",
            "usage": {"input_tokens": 10, "output_tokens": 0, "estimated": True},
        }
    )
    assert listed[3] == "≈10"
