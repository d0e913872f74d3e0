"""Setting budgets, resuming jobs they paused, and reading the spend ledger.

Raising a budget resumes every job of that user or project paused as
``budget_exhausted``: they go back to ``queued`` in the request's transaction
and their advance messages are sent after its commit. A job resumes from its
ledger, so nothing it already did runs again; if the budget still does not
cover its next call, the worker pauses it again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from typing import Any

from celery import Celery
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from services.api.admin.budgets.schemas import (
    BudgetOut,
    BudgetPut,
    ProjectBudget,
    SpendBy,
    SpendReport,
    SpendRow,
    UserIdBudget,
)
from services.api.admin.service import find_user
from services.api.errors import not_found
from services.api.jobs.service import enqueue
from services.api.transaction import after_commit
from services.common.models import Budget, Job, Project, SpendRecord, User


@dataclass(frozen=True)
class Target:
    scope: str
    user: User | None
    project: Project | None


def resolve_target(db: Session, *, body: BudgetPut) -> Target:
    """The user or project a budget body names; 404 when it does not exist."""
    if isinstance(body, ProjectBudget):
        project = _project_by_ref(db, body.project)
        if project is None:
            raise not_found("project")
        return Target("project", None, project)
    if isinstance(body, UserIdBudget):
        user = db.get(User, body.user_id)
    else:
        user = find_user(db, email=body.user_email)
    if user is None:
        raise not_found("user")
    return Target("user", user, None)


def _project_by_ref(db: Session, ref: str) -> Project | None:
    try:
        by_id = db.get(Project, uuid.UUID(ref))
    except ValueError:
        by_id = None
    return by_id or db.scalar(select(Project).where(Project.name == ref.strip()))


def next_reset(now: datetime, reset_day: int) -> datetime:
    """The first ``reset_day`` 00:00 UTC strictly after ``now``."""
    this_month = now.replace(day=reset_day, hour=0, minute=0, second=0, microsecond=0)
    if this_month > now:
        return this_month
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return this_month.replace(year=year, month=month)


UPSERT_SQL = {
    "user": text(
        "INSERT INTO budgets (id, scope, user_id, usd_limit, period, reset_day, spent_usd,"
        " spent_tokens, reserved_usd, reserved_tokens)"
        " VALUES (:id, 'user', :owner, 0, 'total', 1, 0, 0, 0, 0)"
        " ON CONFLICT (user_id) WHERE scope = 'user' DO NOTHING"
    ),
    "project": text(
        "INSERT INTO budgets (id, scope, project_id, usd_limit, period, reset_day, spent_usd,"
        " spent_tokens, reserved_usd, reserved_tokens)"
        " VALUES (:id, 'project', :owner, 0, 'total', 1, 0, 0, 0, 0)"
        " ON CONFLICT (project_id) WHERE scope = 'project' DO NOTHING"
    ),
}


def set_budget(db: Session, *, target: Target, body: BudgetPut) -> Budget:
    """Create or replace the target's budget; spend and reservations carry over, an
    overrun is cleared (its rows stay in ``budget_overruns``)."""
    owner = target.user.id if target.user else target.project.id  # type: ignore[union-attr]
    # Insert-or-nothing first, so two concurrent first PUTs never collide.
    db.execute(UPSERT_SQL[target.scope], {"id": uuid.uuid4(), "owner": owner})
    column = Budget.user_id if target.scope == "user" else Budget.project_id
    budget = db.scalars(
        select(Budget)
        .where(Budget.scope == target.scope, column == owner)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).one()
    now = datetime.now(UTC)
    if body.period == "total":
        budget.period_ends_at = None
    elif (
        budget.period != "monthly"
        or budget.reset_day != body.reset_day
        or budget.period_ends_at is None
    ):
        budget.period_ends_at = next_reset(now, body.reset_day)
    budget.usd_limit = Decimal(str(round(body.usd, 6)))
    budget.token_limit = body.tokens
    budget.period = body.period
    budget.reset_day = body.reset_day
    budget.soft_threshold = body.soft_threshold
    # Setting the budget is the admin's answer to an overrun: calls may start again.
    budget.overrun_usd = Decimal(0)
    budget.overrun_at = None
    budget.updated_at = now
    db.flush()
    return budget


def resume_paused_jobs(db: Session, *, celery: Celery, target: Target) -> list[uuid.UUID]:
    """Put the target's budget-paused jobs back in the queue; sent after commit."""
    where = "user_id = :owner" if target.scope == "user" else "project_id = :owner"
    owner = target.user.id if target.user else target.project.id  # type: ignore[union-attr]
    rows = db.execute(
        text(
            "UPDATE jobs SET status = 'queued', error = NULL, updated_at = now()"
            f" WHERE status = 'budget_exhausted' AND {where} RETURNING id"  # noqa: S608
        ),
        {"owner": owner},
    ).all()
    resumed = [row[0] for row in rows]
    for job_id in resumed:
        after_commit(db, partial(enqueue, celery, job_id))
    return resumed


@dataclass(frozen=True)
class Paused:
    """A budget target's jobs paused for it, and the largest worst case they need."""

    jobs: int = 0
    need_usd: Decimal | None = None


def paused_by_target(db: Session) -> dict[tuple[str, uuid.UUID], Paused]:
    """("user" | "project", id) → its budget-paused jobs (a job may wait on either)."""
    found: dict[tuple[str, uuid.UUID], Paused] = {}
    for scope, column in (("user", Job.user_id), ("project", Job.project_id)):
        rows = db.execute(
            select(column, func.count(), func.max(Job.budget_need_usd))
            .where(Job.status == "budget_exhausted", column.is_not(None))
            .group_by(column)
        ).all()
        for owner, count, need in rows:
            if owner is not None:
                found[(scope, owner)] = Paused(int(count), need)
    return found


def budget_view(
    budget: Budget, *, email: str | None, project: str | None, paused: Paused | None = None
) -> BudgetOut:
    spent_usd, spent_tokens = budget.spent_now(datetime.now(UTC))
    remaining = budget.usd_limit - spent_usd - budget.reserved_usd
    tokens_left = None
    if budget.token_limit is not None:
        tokens_left = budget.token_limit - spent_tokens - budget.reserved_tokens
    return BudgetOut(
        id=budget.id,
        scope="user" if budget.scope == "user" else "project",
        user_id=budget.user_id,
        user_email=email,
        project_id=budget.project_id,
        project=project,
        usd_limit=float(budget.usd_limit),
        token_limit=budget.token_limit,
        period=budget.period,
        reset_day=budget.reset_day,
        soft_threshold=budget.soft_threshold,
        period_ends_at=budget.period_ends_at,
        spent_usd=float(spent_usd),
        spent_tokens=spent_tokens,
        reserved_usd=float(budget.reserved_usd),
        reserved_tokens=budget.reserved_tokens,
        usd_remaining=float(max(remaining, Decimal(0))),
        tokens_remaining=max(tokens_left, 0) if tokens_left is not None else None,
        overrun_usd=float(budget.overrun_usd),
        overrun_at=budget.overrun_at,
        paused_jobs=paused.jobs if paused else 0,
        next_call_usd=float(paused.need_usd) if paused and paused.need_usd is not None else None,
    )


def list_budgets(db: Session) -> list[BudgetOut]:
    rows = db.execute(
        select(Budget, User.email, Project.name)
        .outerjoin(User, User.id == Budget.user_id)
        .outerjoin(Project, Project.id == Budget.project_id)
        .order_by(Budget.scope, User.email, Project.name)
    ).all()
    paused = paused_by_target(db)

    def waiting(b: Budget) -> Paused | None:
        owner = b.user_id if b.scope == "user" else b.project_id
        return paused.get((b.scope, owner)) if owner is not None else None

    return [budget_view(b, email=email, project=name, paused=waiting(b)) for b, email, name in rows]


def _spend_key(by: str) -> tuple[Any, Any, Any]:
    """(label column, id column or None, join) for one way of grouping the ledger."""
    if by == "user":
        return User.email, SpendRecord.user_id, (User, User.id == SpendRecord.user_id)
    if by == "project":
        return Project.name, SpendRecord.project_id, (Project, Project.id == SpendRecord.project_id)
    if by == "model":
        return SpendRecord.model, None, None
    day = func.to_char(func.timezone("UTC", SpendRecord.created_at), "YYYY-MM-DD")
    return day, None, None


def spend_report(db: Session, *, by: SpendBy, since: datetime | None) -> SpendReport:
    """Aggregates of the spend ledger by user, project, model or UTC day."""
    key, key_id, join = _spend_key(by)
    cost = func.coalesce(func.sum(SpendRecord.cost_usd), 0)
    groups = [key] if key_id is None else [key, key_id]
    stmt: Any = select(
        *groups,
        func.count(SpendRecord.id),
        func.coalesce(func.sum(SpendRecord.input_tokens), 0),
        func.coalesce(func.sum(SpendRecord.output_tokens), 0),
        func.coalesce(func.sum(SpendRecord.cached_tokens), 0),
        cost,
        func.count(SpendRecord.id).filter(SpendRecord.estimated),
    ).select_from(SpendRecord)
    if join is not None:
        stmt = stmt.outerjoin(*join)
    if since is not None:
        stmt = stmt.where(SpendRecord.created_at >= since)
    stmt = stmt.group_by(*groups).order_by(cost.desc())
    items = []
    for row in db.execute(stmt).all():
        labels, (calls, tin, tout, tcached, usd, guessed) = row[: len(groups)], row[len(groups) :]
        items.append(
            SpendRow(
                key=labels[0],
                id=labels[1] if len(labels) > 1 else None,
                calls=calls,
                input_tokens=tin,
                output_tokens=tout,
                cached_tokens=tcached,
                cost_usd=float(usd),
                estimated_calls=guessed,
            )
        )
    return SpendReport(by=by, since=since, items=items, total_usd=sum(i.cost_usd for i in items))
