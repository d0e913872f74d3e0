"""What every stage works with: the job, its ledger steps, the structured caller, progress.

Steps are written only through ``done`` (one fenced statement via the runtime's
recorder, usage included), so a step's data and its cost land together, and a
resumed survey reads back exactly what each finished unit produced.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from services.common.contracts.statuses import StepStatus
from services.common.surveys import SurveyShape, shape_for
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import StepView
from services.worker.spine.recorder import StepWrite, UsageDelta, record
from services.worker.survey.keys import STAGES
from services.worker.survey.structured import Spent, StructuredCaller
from services.worker.tools.base import ToolContext


@dataclass(frozen=True)
class SurveyJob:
    job_id: uuid.UUID
    session_id: uuid.UUID | None
    user_id: uuid.UUID
    project_id: uuid.UUID | None
    input: dict[str, Any]

    @property
    def topic(self) -> str:
        return str(self.input["topic"])

    @property
    def shape(self) -> SurveyShape:
        return shape_for(self.input.get("length"))

    def in_years(self, year: int | None) -> bool:
        """Whether a paper fits the survey's years; one whose year is unknown is kept."""
        years = self.input.get("years")
        if year is None or not years:
            return True
        first, _, last = str(years).partition("-")
        return int(first) <= year <= int(last or first)

    @property
    def added_since(self) -> datetime | None:
        """``since``: only library documents added at or after it (a schedule's runs
        set it to the previous run's time: "what's new since last run")."""
        since = self.input.get("since")
        return datetime.fromisoformat(str(since)) if since else None

    @property
    def sections_wanted(self) -> int:
        return self.shape.sections

    @property
    def papers_wanted(self) -> int:
        return self.shape.max_papers


@dataclass
class Progress:
    """The figures of the ``progress`` event (web and CLI show them)."""

    stage: str = "plan"
    papers_found: int = 0
    papers_read: int = 0
    sections_total: int = 0
    sections_written: int = 0
    cost_usd: Decimal = Decimal(0)

    def as_event(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "papers_found": self.papers_found,
            "papers_read": self.papers_read,
            "sections_total": self.sections_total,
            "sections_written": self.sections_written,
            "cost_usd": float(self.cost_usd),
        }


@dataclass
class SurveyContext:
    deps: RuntimeDeps
    lease: Lease
    job: SurveyJob
    events: JobEvents
    caller: StructuredCaller
    steps: dict[str, StepView]
    progress: Progress = field(default_factory=Progress)
    cancel_requested: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def result(self, key: str) -> Any:
        """A finished step's data, or None when the step has not succeeded yet."""
        step = self.steps.get(key)
        return step.result if step is not None and step.status == StepStatus.SUCCEEDED else None

    def done(self, key: str, *, stage: str, result: Any, spent: Spent | None = None) -> None:
        """Record a finished unit of work with its usage (fenced; raises LeaseLost)."""
        spent = spent or Spent()
        usage = UsageDelta(
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            cached_tokens=spent.cached_tokens,
            cost_usd=spent.cost_usd,
        )
        arguments = {"model_calls": spent.calls, "models": spent.models}
        written = record(
            self.deps.writer,
            self.lease,
            session_id=None,
            step=StepWrite(
                key=key,
                kind="survey",
                name=stage,
                round_no=STAGES.index(stage),
                status=StepStatus.SUCCEEDED,
                arguments=arguments,
                result=result,
                started_at=spent.started_at,
            ),
            usage=usage,
        )
        with self._lock:
            self.cancel_requested |= written.cancel_requested
            self.steps[key] = StepView(
                key=key,
                kind="survey",
                name=stage,
                round=STAGES.index(stage),
                tool_call_id=None,
                status=StepStatus.SUCCEEDED,
                arguments=arguments,
                intent=None,
                result=result,
                error=None,
                executions=1,
            )
            self.progress.cost_usd += spent.cost_usd

    def tool_context(self, *, call: str, step_key: str) -> ToolContext:
        """What a stage hands the agent's own tools (library search, PDF fetch) as this job."""
        job = self.job
        return ToolContext(
            job_id=str(job.job_id),
            session_id=str(job.session_id) if job.session_id else None,
            user_id=str(job.user_id),
            project_id=str(job.project_id) if job.project_id else None,
            workspace=Path("."),
            tool_call_id=call,
            step_key=step_key,
            emit=lambda *_: None,
            library=self.deps.library,
            db=self.deps.factory,
        )

    def report(self, **changes: Any) -> None:
        """Update the progress figures and publish them."""
        with self._lock:
            for name, value in changes.items():
                setattr(self.progress, name, value)
            data = self.progress.as_event()
        self.events.emit("progress", data)

    def bump(self, name: str) -> None:
        with self._lock:
            setattr(self.progress, name, getattr(self.progress, name) + 1)
            data = self.progress.as_event()
        self.events.emit("progress", data)
