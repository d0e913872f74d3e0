"""The estimate's body is a survey's input; its answer says calls, tokens, cost and budget."""

from __future__ import annotations

from pydantic import BaseModel, Field

from services.api.jobs.schemas import SurveyInput


class SurveyEstimateIn(SurveyInput):
    project: str | None = Field(default=None, max_length=200, description="the job's project")


class SurveyEstimate(BaseModel):
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    papers: int = Field(description="papers the survey would read (library documents + seeds)")
    budget_remaining_usd: float | None = Field(description="null: no budget applies")
    within_budget: bool
