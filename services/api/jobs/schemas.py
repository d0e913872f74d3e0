"""Job submission bodies (validated per kind) and job views."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.common.models import Job


class TurnInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1)


class SurveyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = Field(min_length=3, max_length=2000)
    seed_papers: list[str] = Field(default_factory=list, max_length=100)
    years: str | None = Field(default=None, max_length=20, pattern=r"^\d{4}(-\d{4})?$")
    length: Literal["short", "medium", "long"] = "medium"


class BatchTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1)


class BatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: list[BatchTask] = Field(min_length=1, max_length=1000)
    max_concurrency: int = Field(default=4, ge=1, le=200)


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["turn", "survey", "batch"]
    input: dict[str, Any]
    session_id: str | None = None
    project: str | None = Field(default=None, max_length=200)
    max_turns: int | None = Field(default=None, ge=1, le=500)


INPUT_MODELS: dict[str, type[BaseModel]] = {
    "turn": TurnInput,
    "survey": SurveyInput,
    "batch": BatchInput,
}


def job_view(job: Job) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "kind": job.kind,
        "status": job.status,
        "session_id": str(job.session_id) if job.session_id else None,
        "parent_job_id": str(job.parent_job_id) if job.parent_job_id else None,
        "project_id": str(job.project_id) if job.project_id else None,
        "input": job.input,
        "result": job.result,
        "error": job.error,
        "usage": {
            "input_tokens": job.input_tokens,
            "output_tokens": job.output_tokens,
            "cached_tokens": job.cached_tokens,
        },
        "cost_usd": float(job.cost_usd),
        "attempts": job.attempts,
        "trace_id": job.trace_id,
        "created_at": _iso(job.created_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


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


class ArtifactOut(BaseModel):
    name: str
    size: int
    mime: str
    url: str
