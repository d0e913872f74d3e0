"""What a member sees when submitting: the budget left (a survey's estimate: api/surveys).

Read-only and advisory: the worker's reservation before each call is what
actually enforces a budget; these numbers only let a member decide in advance.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from services.api.admin.budgets.schemas import BudgetRemaining
from services.common.models import Budget


def remaining_budget(
    db: Session, *, user_id: uuid.UUID, project_id: uuid.UUID | None
) -> BudgetRemaining | None:
    """The tightest of the user's and the project's budgets; None when neither has one."""
    owners = [(Budget.scope == "user") & (Budget.user_id == user_id)]
    if project_id is not None:
        owners.append((Budget.scope == "project") & (Budget.project_id == project_id))
    budgets = db.scalars(select(Budget).where(or_(*owners))).all()
    if not budgets:
        return None
    now = datetime.now(UTC)
    spent = {b.id: b.spent_now(now) for b in budgets}
    usd = min(b.usd_limit - spent[b.id][0] - b.reserved_usd for b in budgets)
    token_lefts = [
        b.token_limit - spent[b.id][1] - b.reserved_tokens
        for b in budgets
        if b.token_limit is not None
    ]
    return BudgetRemaining(
        usd_remaining=float(max(usd, Decimal(0))),
        tokens_remaining=max(min(token_lefts), 0) if token_lefts else None,
    )
