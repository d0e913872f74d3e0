"""Job submission bodies (validated per kind) and job views."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from services.api.admin.budgets.schemas import BudgetRemaining, CostEstimate
from services.api.bodies import NOT_BLANK, RequestBody
from services.api.jobs.usage import UsageTotals
from services.common.models import Job
from services.common.models.jobs import JobStatusName

# "memory": the background memory maintenance job (started by the worker, not submittable).
JobKind = Literal["turn", "survey", "batch", "memory"]


class TurnInput(RequestBody):
    content: str = Field(min_length=1, pattern=NOT_BLANK)


SurveyFormat = Literal["md", "tex"]
SURVEY_FORMATS: tuple[SurveyFormat, ...] = ("md", "tex")


class SurveyInput(RequestBody):
    topic: str = Field(min_length=3, max_length=2000, pattern=NOT_BLANK)
    seed_papers: list[Annotated[str, Field(min_length=1, max_length=300, pattern=NOT_BLANK)]] = (
        Field(default_factory=list, max_length=100, description="DOIs (any spelling) or titles")
    )
    years: str | None = Field(default=None, max_length=20, pattern=r"^\d{4}(-\d{4})?$")
    venues: list[Annotated[str, Field(min_length=1, max_length=200, pattern=NOT_BLANK)]] = Field(
        default_factory=list, max_length=50
    )
    length: Literal["short", "medium", "long"] = "medium"
    formats: list[SurveyFormat] = Field(default_factory=lambda: list(SURVEY_FORMATS), min_length=1)
    since: AwareDatetime | None = Field(
        default=None,
        description="Only library papers added at or after this time (no OpenAlex fill); "
        "a schedule's runs set it to the previous run's time",
    )

    @model_validator(mode="after")
    def _years_in_order(self) -> SurveyInput:
        # A reversed range means the same years (and the OpenAPI schema cannot say
        # "ordered", so refusing it would refuse input the schema allows).
        if self.years and "-" in self.years:
            start, end = sorted(int(y) for y in self.years.split("-"))
            self.years = f"{start}-{end}"
        return self


class BatchTask(RequestBody):
    content: str = Field(min_length=1, pattern=NOT_BLANK)


class BatchInput(RequestBody):
    tasks: list[BatchTask] = Field(min_length=1, max_length=1000)
    max_concurrency: int = Field(default=4, ge=1, le=200)


class _JobCreateBase(RequestBody):
    session_id: str | None = Field(default=None, max_length=100)
    project: str | None = Field(default=None, max_length=200)
    max_turns: int | None = Field(default=None, ge=1, le=500)


class TurnJobCreate(_JobCreateBase):
    kind: Literal["turn"]
    input: TurnInput


class SurveyJobCreate(_JobCreateBase):
    kind: Literal["survey"]
    input: SurveyInput


class BatchJobCreate(_JobCreateBase):
    kind: Literal["batch"]
    input: BatchInput


# The body of POST /v1/jobs: its ``input`` is typed by ``kind``.
JobCreate = Annotated[TurnJobCreate | SurveyJobCreate | BatchJobCreate, Field(discriminator="kind")]


class JobAccepted(BaseModel):
    id: uuid.UUID
    status: JobStatusName
    session_id: uuid.UUID | None
    budget: BudgetRemaining | None = Field(
        default=None, description="What the tightest applicable budget still allows; null: none"
    )
    estimate: CostEstimate | None = Field(default=None, description="Surveys: a rough cost")


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    estimated: bool = Field(
        default=False,
        description="Some call reported no usage: these counts include a local estimate",
    )


class JobOut(BaseModel):
    id: uuid.UUID
    # Any stored kind is shown, not only the ones this version submits: a job a
    # newer version wrote (during a rolling upgrade) would otherwise turn every
    # listing that contains it into a 500. The worker fails such a job with a
    # reason (worker/job_runners.py), and the listing must still show it.
    kind: JobKind | str = Field(
        description="turn, survey, batch or memory; any other value is a kind "
        "this version does not run, shown as stored"
    )
    status: JobStatusName
    session_id: uuid.UUID | None
    parent_job_id: uuid.UUID | None
    project_id: uuid.UUID | None
    input: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    usage: Usage
    cost_usd: float
    attempts: int
    trace_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    model_wait_since: datetime | None = Field(
        default=None,
        description="waiting_model: since when the job has waited for its model endpoint",
    )

    @classmethod
    def of(cls, job: Job, usage: UsageTotals | None = None) -> JobOut:
        """``job`` as the API reports it; ``usage`` (jobs/usage.py) is a batch's tasks' sum."""
        usage = usage or UsageTotals.own(job)
        return cls(
            id=job.id,
            kind=job.kind,
            status=job.status,
            session_id=job.session_id,
            parent_job_id=job.parent_job_id,
            project_id=job.project_id,
            input=job.input,
            result=job.result,
            error=job.error,
            usage=Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.cached_tokens,
                estimated=usage.estimated,
            ),
            cost_usd=float(usage.cost_usd),
            attempts=job.attempts,
            trace_id=job.trace_id,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            model_wait_since=job.model_wait_since if job.status == "waiting_model" else None,
        )


class JobList(BaseModel):
    items: list[JobOut]


class StepOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    seq: int
    kind: str
    name: str
    round: int
    tool_call_id: str | None
    status: str
    arguments: dict[str, Any] | None
    result: Any
    error: dict[str, Any] | None
    executions: int
    started_at: datetime
    finished_at: datetime | None


class StepList(BaseModel):
    items: list[StepOut]


class ArtifactOut(BaseModel):
    name: str = Field(description="The artifact's path in the workspace; the key in `url`")
    display_name: str = Field(description="The file name, safe to show (no control characters)")
    size: int
    mime: str
    url: str


class ArtifactList(BaseModel):
    items: list[ArtifactOut]
