"""Single reservations: all-or-nothing across budgets, the soft tier, monthly rollover."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import Engine, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Budget
from services.worker.spine.budget.orphans import release_orphans
from services.worker.spine.budget.reservation import (
    Ask,
    Payer,
    Settlement,
    reserve_budget,
    settle_budget,
)
from tests.fixtures.builders import make_user
from tests.worker.budget.builders import budget_row, make_budget

ASK = Ask(usd=Decimal("1"), tokens=100, fast_usd=Decimal("0.1"), fast_tokens=100)


def _writer(engine: Engine) -> Engine:
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _payer(user_id: uuid.UUID) -> Payer:
    return Payer(user_id=user_id, project_id=None, job_id=None, fence=1)


def _set(factory: sessionmaker[Session], budget_id: uuid.UUID, **values: object) -> None:
    with factory() as db, db.begin():
        db.execute(update(Budget).where(Budget.id == budget_id).values(**values))


class TestReserve:
    def test_past_the_soft_threshold_the_fast_tier_worst_case_is_reserved(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="10")
        first = reserve_budget(_writer(engine), payer=_payer(user.id), ask=ASK, soft_default=0.8)
        assert first.ok and not first.soft and first.usd == Decimal(1)
        _set(session_factory, budget, spent_usd=Decimal("8.5"))
        second = reserve_budget(_writer(engine), payer=_payer(user.id), ask=ASK, soft_default=0.8)
        assert second.ok and second.soft and second.usd == Decimal("0.1")
        assert budget_row(session_factory, budget).reserved_usd == Decimal("1.1")

    def test_a_refusal_reserves_nothing_anywhere(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="0.5")
        held = reserve_budget(_writer(engine), payer=_payer(user.id), ask=ASK, soft_default=0.99)
        assert not held.ok and held.refused_by == ["user"] and held.id is None
        assert budget_row(session_factory, budget).reserved_usd == 0

    def test_a_monthly_budget_starts_again_after_its_period_ends(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="1")
        past = datetime.now(UTC) - timedelta(days=40)
        _set(session_factory, budget, period="monthly", period_ends_at=past, spent_usd=Decimal(1))
        held = reserve_budget(_writer(engine), payer=_payer(user.id), ask=ASK, soft_default=1.0)
        assert held.ok
        row = budget_row(session_factory, budget)
        assert row.spent_usd == 0 and row.reserved_usd == 1
        assert row.period_ends_at is not None and row.period_ends_at > datetime.now(UTC)
        assert row.period_ends_at.day == past.day  # same reset day, a later month

    def test_settle_charges_the_real_cost_and_a_released_reservation_is_not_given_back_twice(
        self, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        budget = make_budget(session_factory, user_id=user.id, usd="10")
        payer = _payer(user.id)
        held = reserve_budget(_writer(engine), payer=payer, ask=ASK, soft_default=1.0)
        # No job holds a lease for it: the sweeper releases it (as for a dead worker).
        assert release_orphans(session_factory) >= 1
        assert budget_row(session_factory, budget).reserved_usd == 0
        cost = Settlement(cost_usd=Decimal("0.25"), input_tokens=10, output_tokens=5, model="m")
        still_held = settle_budget(_writer(engine), payer=payer, reservation=held, settlement=cost)
        assert still_held is False
        row = budget_row(session_factory, budget)
        assert row.reserved_usd == 0 and row.spent_usd == Decimal("0.25")
        assert row.spent_tokens == 15
