"""``POST /v1/surveys/estimate``: a survey's model calls, tokens and cost, checked
against the caller's tightest budget, before anything is queued."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from services.api.access import target_project
from services.api.admin.budgets.remaining import remaining_budget
from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses
from services.api.surveys.estimate import survey_figures
from services.api.surveys.schemas import SurveyEstimate, SurveyEstimateIn

router = APIRouter(prefix="/v1/surveys", tags=["surveys"], responses=error_responses(401, 422))


@router.post("/estimate", response_model=SurveyEstimate, responses=error_responses(404, 413))
def estimate_survey(
    body: Annotated[SurveyEstimateIn, Body()], db: DbSession, user: CurrentUser
) -> SurveyEstimate:
    """What the survey would cost; nothing is reserved or queued."""
    project = target_project(db, user, body.project)
    project_id = project.id if project is not None else None
    calls, papers, cost = survey_figures(
        db, user_id=user.id, project_id=project_id, length=body.length, seeds=len(body.seed_papers)
    )
    budget = remaining_budget(db, user_id=user.id, project_id=project_id)
    left_usd = budget.usd_remaining if budget is not None else None
    left_tokens = budget.tokens_remaining if budget is not None else None
    within = (left_usd is None or cost <= left_usd) and (
        left_tokens is None or calls.input_tokens + calls.output_tokens <= left_tokens
    )
    return SurveyEstimate(
        model_calls=calls.count,
        input_tokens=calls.input_tokens,
        output_tokens=calls.output_tokens,
        cost_usd=cost,
        papers=papers,
        budget_remaining_usd=left_usd,
        within_budget=within,
    )
