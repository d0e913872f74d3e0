"""The memory maintenance job: reads the session, may edit only the memory documents.

Its model is offered one tool, ``memory``, and any other tool name it asks for
is refused without running. It is capped in model calls (``memory_max_steps``)
and tokens (``memory_max_tokens``). Durable like a turn: the brief (what it
reads) is recorded first, every model call and tool call is a ledger step, and
a resumed job replays them; memory writes replace whole documents, so one
repeated after a crash changes nothing. It adds no messages to the session.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

from services.common.contracts.statuses import JobStatus, StepStatus
from services.common.contracts.steps import (
    LlmStepError,
    MemoryLlmStepResult,
    TokenCounts,
    ToolCallRecord,
    ToolStepResult,
)
from services.common.models import Job
from services.worker.context.view import render_transcript
from services.worker.llm.errors import ModelError
from services.worker.memory.documents import read_documents, render_memory
from services.worker.memory.tool import memory_tool
from services.worker.spine.conversation import ordered_messages, to_model_messages
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.drain import draining
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease
from services.worker.spine.ledger import (
    StepView,
    llm_key,
    load_steps,
    tool_key,
    tool_step_error,
    tool_step_result,
)
from services.worker.spine.model_wait import outage_of, park_for_model
from services.worker.spine.outcome import Outcome
from services.worker.spine.recorder import StepWrite, UsageDelta, record
from services.worker.spine.revoked import stop_if_revoked
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.registry import ToolRegistry

BRIEF_KEY = "memory:brief"
MEMORY_TOOLS = ToolRegistry([memory_tool()])
TRANSCRIPT_CHARS = 12_000
MAINTAIN_PROMPT = (
    "You maintain long-term memory for a research assistant. Read the current memory and "
    "the recent conversation. Record durable facts only: who the user is and how they like "
    "to work (user/profile, user/feedback), and what the project is about and has decided "
    "(project/notes). Use the memory tool to write whole documents; keep each short. "
    "When nothing needs to change, answer 'no changes'."
)


class MaintenanceRunner:
    def __init__(self, deps: RuntimeDeps, lease: Lease, job: Job, events: JobEvents) -> None:
        assert job.session_id is not None
        self.deps, self.lease, self.events = deps, lease, events
        self.job_id, self.session_id = job.id, job.session_id
        self.user_id, self.project_id = job.user_id, job.project_id
        self.max_steps = min(job.max_turns, deps.settings.memory_max_steps)
        with deps.factory() as db:
            self.steps = load_steps(db, job.id)
            if BRIEF_KEY not in self.steps:
                self.history = to_model_messages(
                    "", ordered_messages(db, session_id=job.session_id, upto_job=job)
                )[1:]
                self.memory = render_memory(
                    read_documents(db, user_id=job.user_id, project_id=job.project_id)
                )

    def run(self, deadline: float) -> Outcome:
        brief = self._brief()
        first = True
        while True:
            if self.lease.lost.is_set():
                return Outcome.LEASE_LOST
            if not first and time.monotonic() >= deadline:
                return Outcome.SLICE_EXPIRED
            first = False
            stopped = stop_if_revoked(self.deps, self.lease, self.events, self)
            if stopped is not None:
                return stopped
            round_no = sum(1 for s in self.steps.values() if s.kind == "llm" and s.done)
            if round_no:
                last = self.steps[llm_key(round_no - 1)]
                if last.status != StepStatus.SUCCEEDED:
                    failed = _llm_error(last)
                    message = failed.get("message") if failed else None
                    return self._finish(JobStatus.FAILED, error=message)
                reply = _llm_result(last)
                calls = (reply.get("tool_calls") if reply else None) or []
                if not calls:
                    assert reply is not None  # as before: a step with no result fails here
                    answer: str | None = reply.get("content")
                    return self._finish(JobStatus.SUCCEEDED, result={"content": answer})
                pending = [c for c in calls if tool_key(round_no - 1, c["id"]) not in self.steps]
                for call in pending:
                    self._run_tool(round_no - 1, call)
                if pending:
                    continue
            if round_no >= self.max_steps:
                return self._finish(
                    JobStatus.SUCCEEDED, result={"content": "stopped at the step cap"}
                )
            if self._tokens_used() >= self.deps.settings.memory_max_tokens:
                return self._finish(
                    JobStatus.SUCCEEDED, result={"content": "stopped at the token cap"}
                )
            outcome = self._model_round(round_no, brief)
            if outcome is not None:
                return outcome

    def _brief(self) -> str:
        step = self.steps.get(BRIEF_KEY)
        if step is not None:
            return str(step.result["content"])
        transcript = render_transcript(self.history, previous=None)[-TRANSCRIPT_CHARS:]
        content = (
            f"Current memory:\n{self.memory or '(empty)'}\n\n"
            f"Recent conversation:\n{transcript or '(empty)'}"
        )
        self._record(
            StepWrite(
                key=BRIEF_KEY,
                kind="brief",
                name="memory",
                round_no=0,
                status=StepStatus.SUCCEEDED,
                result={"content": content},
            )
        )
        return content

    def _messages(self, brief: str, round_no: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": MAINTAIN_PROMPT},
            {"role": "user", "content": brief},
        ]
        for r in range(round_no):
            reply = _llm_result(self.steps[llm_key(r)])
            calls = (reply.get("tool_calls") if reply else None) or []
            said: str | None = reply.get("content") if reply else None
            messages.append(
                {
                    "role": "assistant",
                    "content": said,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in calls
                    ]
                    or None,
                }
            )
            for c in calls:
                step = self.steps.get(tool_key(r, c["id"]))
                content = _tool_text(step)
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})
        for m in messages:
            if m.get("tool_calls") is None:
                m.pop("tool_calls", None)
        return messages

    def _model_round(self, round_no: int, brief: str) -> Outcome | None:
        model = self.deps.settings.model
        key = llm_key(round_no)
        try:
            # The lead switches this call to the router (scene memory_maintain).
            resp = self.deps.model.complete(
                model=model,
                messages=self._messages(brief, round_no),
                tools=MEMORY_TOOLS.schemas(),
                max_tokens=min(self.deps.settings.llm_max_tokens, 2048),
                conversation_key=f"{self.session_id}:memory",
                stream=False,
            )
        except ModelError as err:
            if draining():
                # Stopping: hand the job back, recording nothing (model_wait.py).
                return Outcome.SLICE_EXPIRED
            outage = outage_of(err, None, base_url=getattr(self.deps.model, "base_url", None))
            if outage is not None:
                # The endpoint is down: wait for it, recording nothing (model_wait.py).
                return park_for_model(self.deps, self.lease, self.events, outage)
            error: LlmStepError = {"code": "model_error", "message": str(err)}
            self._record(
                StepWrite(
                    key=key,
                    kind="llm",
                    name=model,
                    round_no=round_no,
                    status=StepStatus.FAILED,
                    arguments={"model": model},
                    error=error,
                )
            )
            return self._finish(JobStatus.FAILED, error=f"model call failed: {err}")
        calls: list[ToolCallRecord] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in resp.tool_calls
        ]
        usage: TokenCounts = {
            "input_tokens": resp.usage.input_tokens,
            "output_tokens": resp.usage.output_tokens,
        }
        result: MemoryLlmStepResult = {"content": resp.content, "tool_calls": calls, "usage": usage}
        cost = Decimal(str(round(self.deps.prices.cost_usd(model, resp.usage), 8)))
        self._record(
            StepWrite(
                key=key,
                kind="llm",
                name=resp.model or model,
                round_no=round_no,
                status=StepStatus.SUCCEEDED,
                arguments={"model": model},
                result=result,
            ),
            usage=UsageDelta(
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
                cached_tokens=resp.usage.cached_tokens,
                cost_usd=cost,
            ),
        )
        return None

    def _run_tool(self, round_no: int, call: ToolCallRecord) -> None:
        key = tool_key(round_no, call["id"])
        base: dict[str, Any] = {
            "key": key,
            "kind": "tool",
            "name": call["name"],
            "round_no": round_no,
            "tool_call_id": call["id"],
            "arguments": {"raw": call["arguments"]},
        }
        try:
            # Only the memory tool exists here: any other name is refused unrun.
            tool = MEMORY_TOOLS.get(call["name"])
            try:
                raw = json.loads(call["arguments"] or "{}")
            except json.JSONDecodeError as exc:
                raise ToolError(
                    "invalid_arguments", f"arguments are not JSON: {exc}", category="validation"
                ) from exc
            result = tool.run(tool.parse(raw), self._context(call["id"], key))
        except ToolError as err:
            self._record(StepWrite(**base, status=StepStatus.FAILED, error=err.to_dict()))
            return
        stored: ToolStepResult = {"content": result.content, "data": result.data}
        self._record(StepWrite(**base, status=StepStatus.SUCCEEDED, result=stored))

    def _context(self, call_id: str, key: str) -> ToolContext:
        return ToolContext(
            job_id=str(self.job_id),
            session_id=str(self.session_id),
            user_id=str(self.user_id),
            project_id=str(self.project_id) if self.project_id else None,
            workspace=Path("/nonexistent-memory-job"),  # never touched: no file tools here
            tool_call_id=call_id,
            step_key=key,
            emit=self.events.emit,
            db=self.deps.factory,
        )

    def _record(self, step: StepWrite, usage: UsageDelta | None = None) -> None:
        record(self.deps.writer, self.lease, session_id=None, step=step, usage=usage)
        self.steps[step.key] = StepView(
            key=step.key,
            kind=step.kind,
            name=step.name,
            round=step.round_no,
            tool_call_id=step.tool_call_id,
            status=step.status,
            arguments=step.arguments,
            intent=None,
            result=step.result,
            error=step.error,
            executions=1,
        )

    def _tokens_used(self) -> int:
        total = 0
        for s in self.steps.values():
            reply = _llm_result(s) if s.kind == "llm" and isinstance(s.result, dict) else None
            usage = reply.get("usage") if reply else None
            if usage:
                total += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        return total

    def _finish(
        self, status: JobStatus, *, result: dict[str, Any] | None = None, error: str | None = None
    ) -> Outcome:
        return finish_slice(
            self.deps, self.lease, self.events, status=status, result=result, error=error
        )


def _llm_result(step: StepView) -> MemoryLlmStepResult | None:
    """A maintenance llm step's ``result`` as ``_model_round`` wrote it (None when it has
    none); read with ``.get``, as a row may predate a key."""
    return cast("MemoryLlmStepResult | None", step.result)


def _llm_error(step: StepView) -> LlmStepError | None:
    """A failed maintenance llm step's ``error``."""
    return cast("LlmStepError | None", step.error)


def _tool_text(step: StepView | None) -> str:
    if step is None:
        return "(no result)"
    if step.status == StepStatus.SUCCEEDED:
        result = tool_step_result(step)
        return str(result["content"] if result and "content" in result else "")
    error = tool_step_error(step)
    return f"ERROR {error['message'] if error and 'message' in error else 'failed'}"
