"""One agent turn as a durable state machine: model → tools → model … → answer.

Each iteration decides the next step from the ledger alone, runs that one step
and records it. The ledger and history are read from Postgres once per slice
and then kept in step with every fenced write (see state.py); nothing is held
that the ledger does not also hold, so any worker can pick the job up at any
step boundary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from opentelemetry import trace

from services.common.contracts.statuses import JobStatus, StepStatus
from services.common.contracts.steps import AnswerResult
from services.common.failpoints import failpoint
from services.common.models import ChatSession, Job
from services.common.telemetry.names import SPAN_AGENT_ROUND, TRACER_WORKER
from services.worker.context.compose import ComposedView, compose_view
from services.worker.context.overflow import record_overflow
from services.worker.context.window import server_prompt_tokens, window_for
from services.worker.llm.errors import ModelError
from services.worker.llm.types import ModelResponse
from services.worker.memory.schedule import schedule_maintenance
from services.worker.prompts.for_job import job_prompt
from services.worker.prompts.skills import inject_skills
from services.worker.runtime.subagent_scope import subagent_scope
from services.worker.runtime.tool_exec import JobIdentity, ToolCallSpec, ToolStepRunner
from services.worker.spine.answer import answer_result, model_call_error, reply_step_result
from services.worker.spine.budget.gate import BudgetGate
from services.worker.spine.budget.pause import pause_for_budget
from services.worker.spine.budget.reservation import PendingSettlement
from services.worker.spine.conversation import ordered_messages
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.drain import draining
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import (
    StepView,
    llm_key,
    llm_step_error,
    llm_step_result,
    load_steps,
)
from services.worker.spine.ledger_rules import (
    error_text,
    rounds_since_todo,
    trailing_tool_failures,
)
from services.worker.spine.model_call import call_model, retry_events
from services.worker.spine.model_wait import outage_of, park_for_model
from services.worker.spine.outcome import Outcome
from services.worker.spine.recorder import (
    MessageWrite,
    StepWrite,
    UsageDelta,
    record,
    record_failed_llm,
)
from services.worker.spine.revoked import stop_if_revoked
from services.worker.spine.state import TurnState
from services.worker.spine.suspend import StepSuspended
from services.worker.spine.tool_failures import consecutive_failures_reason
from services.worker.tools.todo import todo_reminder, todo_reminder_due

tracer = trace.get_tracer(TRACER_WORKER)
FAST_TIER = "fast"


@dataclass
class Plan:
    """The next thing to do, derived from the ledger alone."""

    action: str  # "llm" | "tools" | "answer" | "fail"
    round_no: int
    calls: list[ToolCallSpec]
    existing: dict[str, StepView]
    answer: str | None = None
    reason: str | None = None


class TurnRunner:
    def __init__(self, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents) -> None:
        assert job.session_id is not None
        self.deps = deps
        self.lease = lease
        self.job_id = job.id
        self.max_turns = job.max_turns
        self.system_prompt = deps.settings.system_prompt
        self.who = JobIdentity(
            job.id, job.session_id, job.user_id, job.project_id, **subagent_scope(job.input)
        )
        self.kind = job.kind
        self.job_input = job.input
        self.events = events
        self.state = self._load(job)
        self.tools = ToolStepRunner(deps, lease, self.who, events, self.state)
        self.budget = BudgetGate.for_job(deps, lease, job, events)

    def _load(self, job: Job) -> TurnState:
        # No shared snapshot needed: while the lease is held nobody else writes
        # this job's steps or messages, and earlier jobs of the session are done.
        # So each read is one autocommitted statement on the writer.
        db = self.deps.writer
        steps = load_steps(db, self.job_id)
        history = ordered_messages(db, session_id=self.who.session_id, upto_job=job)
        # ``job`` was read after the lease was taken; a cancel since then is
        # returned by the slice's first ledger write.
        cancel = bool(job.cancel_requested)
        self.prompt = job_prompt(db, self.deps.settings, job, history, steps)
        self.system_prompt = self.prompt.system.text
        return TurnState(
            steps=steps, history=history, cancel_requested=cancel, access=self.lease.access
        )

    def run(self, deadline: float) -> Outcome:
        first = True
        while True:
            if self.lease.lost.is_set():
                return Outcome.LEASE_LOST
            if not first and (time.monotonic() >= deadline or draining()):
                return Outcome.SLICE_EXPIRED
            first = False
            if self.state.cancel_requested:
                return self._finish(JobStatus.CANCELLED, error="cancelled by user")
            # Before each step: removed from the project, or disabled. The verdict was
            # read by the statement that ended the last step (or took the lease).
            verdict = self.state.take_access()
            stop = stop_if_revoked(self.deps, self.lease, self.events, self.who, verdict=verdict)
            if stop is not None:
                return stop
            steps = self.state.steps
            plan = self._plan(steps)
            if plan.action == "fail":
                return self._finish(JobStatus.FAILED, error=plan.reason)
            if plan.action == "answer":
                answered: AnswerResult = {"content": plan.answer or ""}
                return self._finish(JobStatus.SUCCEEDED, result=answered)
            if plan.action == "tools":
                with tracer.start_as_current_span(SPAN_AGENT_ROUND) as span:
                    span.set_attribute("leaflab.round", plan.round_no)
                    try:
                        for call in plan.calls:
                            self.tools.run(plan.round_no, call, plan.existing.get(call.id))
                    except StepSuspended as waiting:
                        # Lease already given up with the waiting step (suspend.py).
                        span.set_attribute("leaflab.suspended", waiting.reason)
                        return Outcome.WAITING
                continue
            outcome = self._llm_round(plan.round_no, steps)
            if outcome in (Outcome.FINISHED, Outcome.PAUSED):
                return outcome

    def _plan(self, steps: dict[str, StepView]) -> Plan:
        done_rounds = sorted(s.round for s in steps.values() if s.kind == "llm" and s.done)
        round_no = len(done_rounds)
        if round_no:
            last = steps[llm_key(round_no - 1)]
            if last.status != StepStatus.SUCCEEDED:
                return Plan("fail", round_no, [], {}, reason=error_text(llm_step_error(last)))
            reply = llm_step_result(last)
            recorded = (reply.get("tool_calls") if reply else None) or []
            calls = [ToolCallSpec(**c) for c in recorded]
            if not calls:
                answer = reply.get("content") if reply else None
                return Plan("answer", round_no, [], {}, answer=answer)
            by_call = {
                s.tool_call_id: s
                for s in steps.values()
                if s.kind == "tool" and s.round == round_no - 1
            }
            pending = [c for c in calls if c.id not in by_call or not by_call[c.id].done]
            if pending:
                existing = {c.id: by_call[c.id] for c in pending if c.id in by_call}
                return Plan("tools", round_no - 1, pending, existing)
        failures = trailing_tool_failures(steps)
        limit = self.deps.settings.max_consecutive_tool_failures
        if failures >= limit:
            return Plan(
                "fail",
                round_no,
                [],
                {},
                reason=consecutive_failures_reason(steps, limit),
            )
        if round_no >= self.max_turns:
            return Plan("fail", round_no, [], {}, reason=f"max_turns ({self.max_turns}) reached")
        return Plan("llm", round_no, [], {})

    def _llm_round(self, round_no: int, steps: dict[str, StepView]) -> Outcome | None:
        router = self.deps.router
        assert router is not None  # RuntimeDeps builds one
        scene = "agent_reasoning"
        primary = router.primary(scene)
        model = primary.model
        tools = self.tools.schemas() or None
        window = window_for(self.deps, profile=primary.profile, tools=tools)
        view = compose_view(
            deps=self.deps,
            lease=self.lease,
            state=self.state,
            events=self.events,
            session_id=self.who.session_id,
            system_prompt=self.system_prompt,
            round_no=round_no,
            inject=lambda full: inject_skills(full, self.prompt.skills),
            window=window,
        )
        if round_no == 0 and self.prompt.system.switch_starts:
            self.events.emit("prompt_switch", {"to": self.prompt.system.switched_to})
        messages = view.messages
        reminder = "todo" in self.deps.registry.names() and todo_reminder_due(
            rounds_since_todo(steps)
        )
        if reminder:
            todos = self._current_todos()
            messages.append({"role": "user", "content": todo_reminder(todos)})
        key = llm_key(round_no)
        view.record.update(window.record(messages))  # the reminder counts too
        if not window.fits(messages):
            # Refused before sending (and before reserving): it could only fail there.
            return self._refuse_overflow(key, round_no, model, messages, view)
        # Reserve the worst case before the call; settle after it, whatever happens.
        # Past a budget's soft threshold the call goes to the fast tier.
        admission = self.budget.admit(
            messages=messages,
            tools=tools,
            normal=model,
            fast=router.primary(scene, FAST_TIER).model,
            prompt_tokens=server_prompt_tokens(
                self.deps, profile=primary.profile, messages=messages, tools=tools
            ),
        )
        if admission.refused:
            pause_for_budget(self.deps.factory, self.lease, self.events, admission=admission)
            return Outcome.PAUSED
        model = admission.model
        tier_override = FAST_TIER if admission.soft else None
        request = {
            "model": model,
            "messages": len(messages),
            "todo_reminder": reminder,
            "context": view.record,
        }
        if round_no == 0:
            request["memory"] = self.prompt.memory
        called_at = datetime.now(UTC)  # the step's real start: it is written once, after
        try:
            resp, model, cost = call_model(
                deps=self.deps,
                router=router,
                budget=self.budget,
                admission=admission,
                scene=scene,
                tier_override=tier_override,
                messages=messages,
                tools=tools,
                conversation_key=view.conversation_key,
                on_token=self.events.token,
                request=request,
                payer=(self.who.user_id, self.who.project_id),
                settle_answer=False,
                on_retry=retry_events(self.events),
            )
        except ModelError as err:
            return self._model_failed(key, round_no, request, err)
        self.events.emit("model", {"model": resp.model or model})  # who answered (watch, chat)
        settle = self.budget.pending(
            admission, model=resp.model or model, usage=resp.usage, cost=cost
        )
        self.events.flush_tokens()
        return self._record_reply(key, round_no, request, resp, cost, settle, called_at)

    def _refuse_overflow(
        self,
        key: str,
        round_no: int,
        model: str,
        messages: list[dict[str, Any]],
        view: ComposedView,
    ) -> Outcome:
        assert view.window is not None
        request = {"model": model, "messages": len(messages), "context": view.record}
        error = view.window.overflow_message(messages)
        record_overflow(
            self.deps,
            self.lease,
            session_id=self.who.session_id,
            key=key,
            round_no=round_no,
            request=request,
            message=error,
        )
        return self._finish(JobStatus.FAILED, error=error)

    def _current_todos(self) -> list[dict[str, Any]]:
        # Read fresh: the todo tool writes the session row, not the ledger.
        with self.deps.factory() as db:
            session = db.get(ChatSession, self.who.session_id)
            return list(session.todos) if session is not None else []

    def _record_reply(
        self,
        key: str,
        round_no: int,
        request: dict[str, Any],
        resp: ModelResponse,
        cost: Decimal,
        settle: PendingSettlement,
        called_at: datetime,
    ) -> Outcome | None:
        result = reply_step_result(resp, cost)
        calls, usage = result["tool_calls"], result["usage"]
        truncated, empty = result["truncated"], result["empty"]
        name = resp.model or str(request["model"])
        failpoint("model.before_record")
        done = record(
            self.deps.writer,
            self.lease,
            session_id=self.who.session_id,
            step=StepWrite(
                key=key,
                kind="llm",
                name=name,
                round_no=round_no,
                status=StepStatus.SUCCEEDED,
                arguments=request,
                result=result,
                started_at=called_at,
            ),
            message=MessageWrite(role="assistant", content=resp.content, tool_calls=calls or None),
            usage=UsageDelta(
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
                cached_tokens=usage["cached_tokens"],
                cost_usd=cost,
                estimated=resp.usage.estimated,
            ),
            settle=settle,
        )
        failpoint("model.after_record")
        self.state.saw(done)
        self.state.started(
            key,
            kind="llm",
            name=name,
            round_no=round_no,
            arguments=request,
            status=StepStatus.SUCCEEDED,
            result=result,
        )
        assert done.message is not None
        self.state.history.append(done.message)
        if calls:
            return None
        return self._finish(
            JobStatus.SUCCEEDED, result=answer_result(resp.content, truncated, empty)
        )

    def _model_failed(
        self, key: str, round_no: int, request: dict[str, Any], err: ModelError
    ) -> Outcome:
        if draining():  # stopping: hand the job back, recording nothing (model_wait.py)
            return Outcome.SLICE_EXPIRED
        outage = outage_of(err, self.deps.router)
        if outage is not None:
            # Every endpoint is down or overloaded: wait for it, recording nothing,
            # so the resumed job makes this same call again.
            return park_for_model(self.deps, self.lease, self.events, outage)
        record_failed_llm(
            self.deps.writer,
            self.lease,
            session_id=self.who.session_id,
            key=key,
            round_no=round_no,
            request=request,
            error=model_call_error(err),
        )
        return self._finish(JobStatus.FAILED, error=f"model call failed: {err}")

    def _finish(
        self, status: JobStatus, *, result: AnswerResult | None = None, error: str | None = None
    ) -> Outcome:
        outcome = finish_slice(
            self.deps, self.lease, self.events, status=status, result=result, error=error
        )
        if status == JobStatus.SUCCEEDED and self.kind == "turn":
            schedule_maintenance(self.deps, job_id=self.job_id)
        return outcome
