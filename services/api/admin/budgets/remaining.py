"""What a member sees when submitting: the budget left, and a survey's rough cost.

Read-only and advisory: the worker's reservation before each call is what
actually enforces a budget; these numbers only let a member decide in advance.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from services.api.admin.budgets.schemas import BudgetRemaining, CostEstimate
from services.common.models import Budget, SpendRecord

# Model calls a survey of each length usually makes, and tokens per call
# (a long context of notes in, a section out).
SURVEY_CALLS = {"short": 15, "medium": 30, "long": 60}
TOKENS_PER_CALL = 8_000


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


def survey_estimate(db: Session, *, length: str) -> CostEstimate:
    """Calls × tokens by length, priced at the lab's average $/token over its spend ledger."""
    calls = SURVEY_CALLS.get(length, SURVEY_CALLS["medium"])
    tokens = calls * TOKENS_PER_CALL
    spent, used = db.execute(
        select(
            func.sum(SpendRecord.cost_usd),
            func.sum(SpendRecord.input_tokens + SpendRecord.output_tokens),
        )
    ).one()
    cost = None
    if spent is not None and used:
        cost = round(float(spent) / float(used) * tokens, 4)
    return CostEstimate(model_calls=calls, tokens=tokens, cost_usd=cost)
