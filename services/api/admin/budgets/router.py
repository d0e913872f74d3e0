"""``/v1/admin/budgets`` (read, set) and ``/v1/admin/spend`` (aggregates): admins only."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Query

from services.api.admin.budgets import service
from services.api.admin.budgets.schemas import (
    BudgetList,
    BudgetPut,
    BudgetSet,
    SpendBy,
    SpendReport,
)
from services.api.deps import AdminUser, DbSession, StateDep
from services.api.errors import error_responses

router = APIRouter(tags=["admin"], responses=error_responses(401, 403, 422))


@router.get("/budgets", response_model=BudgetList)
def list_budgets(db: DbSession, _: AdminUser) -> BudgetList:
    return BudgetList(items=service.list_budgets(db))


@router.put("/budgets", response_model=BudgetSet, responses=error_responses(404, 413))
def set_budget(
    body: Annotated[BudgetPut, Body()], db: DbSession, _: AdminUser, state: StateDep
) -> BudgetSet:
    """Set a user's or project's budget; jobs it paused as budget_exhausted resume."""
    target = service.resolve_target(db, body=body)
    budget = service.set_budget(db, target=target, body=body)
    resumed = service.resume_paused_jobs(db, celery=state.celery, target=target)
    view = service.budget_view(
        budget,
        email=target.user.email if target.user else None,
        project=target.project.name if target.project else None,
    )
    return BudgetSet(**view.model_dump(), resumed_jobs=resumed)


@router.get("/spend", response_model=SpendReport)
def spend(
    db: DbSession,
    _: AdminUser,
    by: SpendBy = Query("user"),
    since: datetime | None = Query(None, description="Only calls settled at or after this time"),
) -> SpendReport:
    return service.spend_report(db, by=by, since=since)
