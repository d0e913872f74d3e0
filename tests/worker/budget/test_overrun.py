"""A charge never passes the budget: clamped to max_tokens, capped at the budget's room,
the excess an overrun row, and a budget with an overrun refuses the next call.

Real Postgres, the real gate and settlement SQL; what is asserted is what an admin
reads: the budget row, the spend ledger and the overrun rows.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.metrics import BUDGET_OVERRUN_USD
from services.common.models import BudgetOverrun, SpendRecord
from services.worker.llm.pricing import ModelPrice, PriceBook
from services.worker.llm.types import Usage
from services.worker.settings import WorkerSettings
from services.worker.spine.budget.gate import BudgetGate
from services.worker.spine.budget.reservation import (
    Ask,
    Payer,
    Settlement,
    reserve_budget,
    settle_budget,
)
from tests.fixtures.builders import make_user
from tests.worker.budget.builders import budget_row, make_budget

# $1 per million input tokens, $10 per million output tokens.
PRICES = PriceBook({"m": ModelPrice(1.0, 10.0, 0.1)})
MAX_TOKENS = 100


def _gate(engine: Engine, user_id: uuid.UUID) -> BudgetGate:
    return BudgetGate(
        writer=engine.execution_options(isolation_level="AUTOCOMMIT"),
        prices=PRICES,
        settings=WorkerSettings(llm_max_tokens=MAX_TOKENS, model="m", model_fast="m"),
        user_id=user_id,
        project_id=None,
        job_id=None,
        fence=1,
    )


def _overruns(factory: sessionmaker[Session], user_id: uuid.UUID) -> list[BudgetOverrun]:
    with factory() as db:
        rows = db.scalars(select(BudgetOverrun).where(BudgetOverrun.user_id == user_id)).all()
        db.expunge_all()
        return list(rows)


def _spend(factory: sessionmaker[Session], user_id: uuid.UUID) -> list[SpendRecord]:
    with factory() as db:
        rows = db.scalars(select(SpendRecord).where(SpendRecord.user_id == user_id)).all()
        db.expunge_all()
        return list(rows)


MESSAGES = [{"role": "user", "content": "x" * 300}]


class TestClampToMaxTokens:
    def test_a_reply_past_max_tokens_is_charged_as_max_tokens_and_the_rest_is_an_overrun(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="1")
        gate = _gate(engine, user.id)
        admission = gate.admit(messages=MESSAGES, tools=None)
        assert not admission.refused
        before = BUDGET_OVERRUN_USD._value.get()
        # The server ignored max_tokens=100 and produced 5,000 tokens.
        usage = Usage(input_tokens=100, output_tokens=5_000)
        billed = Decimal(str(PRICES.billed_usd("m", usage, max_tokens=MAX_TOKENS)))
        gate.settle(admission, model="m", usage=usage, cost=billed)

        row = budget_row(session_factory, budget)
        assert billed == Decimal("0.0011")  # 100 in + 100 out, not 5,000 out
        assert row.spent_usd == billed and row.reserved_usd == 0
        assert row.spent_usd <= row.usd_limit
        assert row.overrun_at is not None
        (over,) = _overruns(session_factory, user.id)
        assert over.reason == "max_tokens" and over.budget_id == budget
        assert over.reported_usd == Decimal("0.0501") and over.charged_usd == billed
        assert over.overrun_usd == Decimal("0.049")
        assert (over.reported_tokens, over.charged_tokens) == (5_100, 200)
        (spend,) = _spend(session_factory, user.id)
        assert (spend.output_tokens, spend.cost_usd, spend.estimated) == (100, billed, False)
        assert BUDGET_OVERRUN_USD._value.get() - before == 0.049

        # The next call of this budget is refused, saying why.
        refused = gate.admit(messages=MESSAGES, tools=None)
        assert refused.refused and refused.reservation.overrun_by == ["user"]
        assert refused.message is not None and "overrun" in refused.message

    def test_a_reply_within_max_tokens_writes_no_overrun(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="1")
        gate = _gate(engine, user.id)
        admission = gate.admit(messages=MESSAGES, tools=None)
        usage = Usage(input_tokens=100, output_tokens=MAX_TOKENS, estimated=True)
        billed = Decimal(str(PRICES.billed_usd("m", usage, max_tokens=MAX_TOKENS)))
        gate.settle(admission, model="m", usage=usage, cost=billed)
        row = budget_row(session_factory, budget)
        assert row.overrun_at is None and row.spent_usd == billed
        assert _overruns(session_factory, user.id) == []
        assert [s.estimated for s in _spend(session_factory, user.id)] == [True]
        assert not gate.admit(messages=MESSAGES, tools=None).refused

    def test_without_a_budget_the_clamped_excess_is_still_recorded(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        gate = _gate(engine, user.id)
        admission = gate.admit(messages=MESSAGES, tools=None)
        usage = Usage(input_tokens=100, output_tokens=1_000)
        billed = Decimal(str(PRICES.billed_usd("m", usage, max_tokens=MAX_TOKENS)))
        gate.settle(admission, model="m", usage=usage, cost=billed)
        (over,) = _overruns(session_factory, user.id)
        assert over.budget_id is None and over.reason == "max_tokens"
        assert over.overrun_usd == Decimal("0.009")


class TestCapAtTheLimit:
    def test_a_charge_larger_than_the_room_stops_at_the_limit(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        """A prompt far larger than its reservation estimated (or any cost past the
        reservation) is charged up to the limit, never past it."""
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="0.005", tokens=1_000)
        writer = engine.execution_options(isolation_level="AUTOCOMMIT")
        payer = Payer(user_id=user.id, project_id=None, job_id=None, fence=1)
        ask = Ask(usd=Decimal("0.004"), tokens=800, fast_usd=Decimal("0.004"), fast_tokens=800)
        held = reserve_budget(writer, payer=payer, ask=ask, soft_default=1.0)
        assert held.ok
        settle_budget(
            writer,
            payer=payer,
            reservation=held,
            settlement=Settlement(
                cost_usd=Decimal("0.02"), input_tokens=3_000, output_tokens=10, model="m"
            ),
        )
        row = budget_row(session_factory, budget)
        assert (row.spent_usd, row.spent_tokens) == (Decimal("0.005"), 1_000)
        assert row.reserved_usd == 0 and row.overrun_usd == Decimal("0.015")
        (over,) = _overruns(session_factory, user.id)
        assert over.reason == "limit"
        assert (over.charged_usd, over.overrun_usd) == (Decimal("0.005"), Decimal("0.015"))
        assert (over.reported_tokens, over.charged_tokens) == (3_010, 1_000)

    def test_user_and_project_budgets_are_charged_alike_within_the_tighter_room(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        from services.common.models import Project
        from tests.fixtures.builders import make_project

        user = make_user(session_factory)
        name = make_project(session_factory, user)
        with session_factory() as db:
            project_id = db.scalars(select(Project.id).where(Project.name == name)).one()
        mine = make_budget(session_factory, user_id=user.id, usd="1")
        theirs = make_budget(session_factory, project_id=project_id, usd="0.003")
        writer = engine.execution_options(isolation_level="AUTOCOMMIT")
        payer = Payer(user_id=user.id, project_id=project_id, job_id=None, fence=1)
        ask = Ask(usd=Decimal("0.002"), tokens=10, fast_usd=Decimal("0.002"), fast_tokens=10)
        held = reserve_budget(writer, payer=payer, ask=ask, soft_default=1.0)
        assert held.ok and len(held.budget_ids) == 2
        cost = Decimal("0.01")
        settle_budget(
            writer,
            payer=payer,
            reservation=held,
            settlement=Settlement(cost_usd=cost, input_tokens=10, model="m"),
        )
        user_row, project_row = (
            budget_row(session_factory, mine),
            budget_row(session_factory, theirs),
        )
        assert user_row.spent_usd == project_row.spent_usd == Decimal("0.003")
        assert project_row.spent_usd <= project_row.usd_limit
        (spend,) = _spend(session_factory, user.id)
        assert spend.cost_usd == Decimal("0.003")  # the ledger agrees with the budgets
        overruns = _overruns(session_factory, user.id)
        assert {o.budget_id for o in overruns} == {mine, theirs}
        assert all(o.reason == "limit" and o.overrun_usd == Decimal("0.007") for o in overruns)
