"""Budgets for tests, written straight to Postgres."""

from __future__ import annotations

import uuid
from decimal import Decimal

from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Budget


def make_budget(
    factory: sessionmaker[Session],
    *,
    user_id: uuid.UUID | None = None,
    project_id: uuid.UUID | None = None,
    usd: str,
    tokens: int | None = None,
    soft_threshold: float | None = None,
) -> uuid.UUID:
    with factory() as db, db.begin():
        budget = Budget(
            scope="user" if user_id else "project",
            user_id=user_id,
            project_id=project_id,
            usd_limit=Decimal(usd),
            token_limit=tokens,
            period="total",
            reset_day=1,
            soft_threshold=soft_threshold,
            spent_usd=Decimal(0),
            spent_tokens=0,
            reserved_usd=Decimal(0),
            reserved_tokens=0,
        )
        db.add(budget)
        db.flush()
        return budget.id


def budget_row(factory: sessionmaker[Session], budget_id: uuid.UUID) -> Budget:
    with factory() as db:
        row = db.get(Budget, budget_id)
        assert row is not None
        db.expunge(row)
        return row
