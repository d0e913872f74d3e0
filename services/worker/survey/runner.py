"""``SurveyRunner``: one time slice of a survey job, stage after stage.

Every stage first looks for its own finished step and returns that data, so a
slice on any worker, after any crash, continues from the first unfinished
unit. Between stages (and between the units of a parallel stage) the runner
stops for a lost lease, a cancel, a draining worker or the end of the slice.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from services.common.contracts.statuses import JobStatus
from services.common.models import Job
from services.worker.llm.errors import ModelError
from services.worker.spine.budget.gate import BudgetGate
from services.worker.spine.budget.pause import pause_for_budget
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.drain import draining
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import load_steps
from services.worker.spine.model_wait import Outage, outage_of, park_for_model
from services.worker.spine.outcome import Outcome
from services.worker.survey.assemble import run_assemble
from services.worker.survey.context import SurveyContext, SurveyJob
from services.worker.survey.gather import run_gather
from services.worker.survey.keys import stage_key
from services.worker.survey.openalex_source import search_ahead
from services.worker.survey.outline import run_outline
from services.worker.survey.plan import run_plan
from services.worker.survey.read import run_read
from services.worker.survey.structured import BudgetRefused, StageFailed, StructuredCaller
from services.worker.survey.verify import run_verify
from services.worker.survey.write import run_write


class SurveyRunner:
    def __init__(self, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents) -> None:
        self.deps = deps
        self.lease = lease
        self.events = events
        self.deadline = 0.0
        survey = SurveyJob(job.id, job.session_id, job.user_id, job.project_id, dict(job.input))
        budget = BudgetGate.for_job(deps, lease, job, events)
        with deps.factory() as db:
            steps = load_steps(db, job.id)
            fresh = db.get(Job, job.id)
            cancel = bool(fresh and fresh.cancel_requested)
            spent = Decimal(fresh.cost_usd) if fresh is not None else Decimal(0)
        caller = StructuredCaller(deps, budget, (job.user_id, job.project_id))
        self.ctx = SurveyContext(
            deps, lease, survey, events, caller, steps, cancel_requested=cancel
        )
        self.ctx.progress.cost_usd = spent

    def run(self, deadline: float) -> Outcome:
        self.deadline = deadline
        try:
            return self._stages()
        except BudgetRefused as refused:
            pause_for_budget(
                self.deps.factory, self.lease, self.events, admission=refused.admission
            )
            return Outcome.PAUSED
        except StageFailed as failed:
            if draining():
                # Stopping: hand the survey back at the stage it is in (model_wait.py).
                return Outcome.SLICE_EXPIRED
            outage = _outage(failed, self.deps)
            if outage is not None:
                # The model is down: the survey waits at the stage it is in (every
                # finished unit is in the ledger) instead of failing hours of work.
                return park_for_model(self.deps, self.lease, self.events, outage)
            return self._finish(JobStatus.FAILED, error=f"survey failed: {failed}")

    def _stages(self) -> Outcome:
        ctx = self.ctx
        if (stop := self._between(first=True)) is not None:
            return stop
        # Gather's OpenAlex search needs only the topic: asked during the plan's call.
        topic_works = search_ahead(ctx) if ctx.result(stage_key("gather")) is None else None
        plan = run_plan(ctx)
        if (stop := self._between()) is not None:
            return stop
        gathered = run_gather(ctx, plan, topic_works)
        papers: dict[str, dict[str, Any]] = gathered["papers"]
        if not papers:
            return self._finish(
                JobStatus.FAILED,
                error="survey failed: no papers found in the library for this topic "
                "(ingest papers with `leaflab library ingest`, or give seed DOIs)",
            )
        ctx.progress.papers_found = len(papers)
        if (stop := self._between()) is not None:
            return stop
        notes = run_read(ctx, plan, papers, self._should_stop)
        if notes is None:
            return self._between() or Outcome.SLICE_EXPIRED
        if (stop := self._between()) is not None:
            return stop
        outline = run_outline(ctx, plan, notes)
        if (stop := self._between()) is not None:
            return stop
        written = run_write(ctx, outline, notes, self._should_stop)
        if written is None:
            return self._between() or Outcome.SLICE_EXPIRED
        if (stop := self._between()) is not None:
            return stop
        checked = run_verify(ctx, written, papers, notes, self._should_stop)
        if checked is None:
            return self._between() or Outcome.SLICE_EXPIRED
        if (stop := self._between()) is not None:
            return stop
        result = run_assemble(ctx, plan, gathered, notes, checked)
        ctx.report(stage="done")
        return self._finish(JobStatus.SUCCEEDED, result=result)

    def _should_stop(self) -> bool:
        return (
            self.lease.lost.is_set()
            or self.ctx.cancel_requested
            or time.monotonic() >= self.deadline
            or draining()
        )

    def _between(self, *, first: bool = False) -> Outcome | None:
        """Why to stop before the next stage, or None to go on."""
        if self.lease.lost.is_set():
            return Outcome.LEASE_LOST
        if self.ctx.cancel_requested:
            return self._finish(JobStatus.CANCELLED, error="cancelled by user")
        # The first stage of a slice always runs, so every slice makes progress.
        if not first and (time.monotonic() >= self.deadline or draining()):
            return Outcome.SLICE_EXPIRED
        return None

    def _finish(
        self, status: JobStatus, *, result: dict[str, Any] | None = None, error: str | None = None
    ) -> Outcome:
        return finish_slice(
            self.deps, self.lease, self.events, status=status, result=result, error=error
        )


def _outage(failed: StageFailed, deps: RuntimeDeps) -> Outage | None:
    """The outage a stage failed on (its model call's error is the cause), if any."""
    cause = failed.__cause__
    if not isinstance(cause, ModelError):
        return None
    return outage_of(cause, deps.router)
