"""Running one tool call as a ledger step, honouring its declared effect on resume."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from pydantic import BaseModel

from services.common.contracts.statuses import StepStatus
from services.common.contracts.steps import ToolStepResult
from services.common.failpoints import failpoint
from services.common.metrics import STEP_DURATION
from services.common.telemetry import tool_call_attributes
from services.common.telemetry.names import TRACER_WORKER, tool_call_span_name
from services.worker.approvals.gate import ApprovalGate
from services.worker.runtime.child_jobs import child_outcome, spawn_child
from services.worker.runtime.mcp_offer import McpOffering
from services.worker.runtime.tool_attempts import run_attempts
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease, fenced_effect
from services.worker.spine.ledger import StepView, tool_key
from services.worker.spine.recorder import MessageWrite, StepWrite, record
from services.worker.spine.state import TurnState
from services.worker.spine.suspend import noting_suspension
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.subagent import AgentTool

log = logging.getLogger(__name__)
tracer = trace.get_tracer(TRACER_WORKER)

MAX_TOOL_MESSAGE_CHARS = 60_000


@dataclass(frozen=True)
class ToolCallSpec:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class JobIdentity:
    job_id: uuid.UUID
    session_id: uuid.UUID
    user_id: uuid.UUID
    project_id: uuid.UUID | None
    # A subagent works in its parent's workspace (and sandbox) and may be
    # offered fewer tools; None: its own session's workspace, every tool.
    workspace_session_id: uuid.UUID | None = None
    tools: frozenset[str] | None = None


class ToolStepRunner:
    """Executes tool calls for one job under its lease."""

    def __init__(
        self,
        deps: RuntimeDeps,
        lease: Lease,
        who: JobIdentity,
        events: JobEvents,
        state: TurnState,
    ) -> None:
        self.deps = deps
        self.lease = lease
        self.who = who
        self.events = events
        self.state = state
        self.gate = ApprovalGate(deps, lease, project_id=who.project_id, events=events)
        narrowed = who.tools is not None
        self.mcp = McpOffering(deps, project_id=who.project_id, narrowed=narrowed, events=events)

    def schemas(self) -> list[dict[str, Any]]:
        """What the model is offered this round: the built-in tools and the MCP ones."""
        return self.mcp.schemas(self.deps.registry.schemas(only=self.who.tools))

    def _begin(self, **fields: Any) -> None:
        step = StepWrite(status=StepStatus.RUNNING, **fields)
        done = record(self.deps.writer, self.lease, session_id=self.who.session_id, step=step)
        self.state.saw(done)
        self.state.started(**fields)

    def run(self, round_no: int, call: ToolCallSpec, existing: StepView | None) -> None:
        key = tool_key(round_no, call.id)
        started = time.perf_counter()
        with (
            tracer.start_as_current_span(
                tool_call_span_name(call.name),
                record_exception=False,
                set_status_on_exception=False,
            ) as span,
            noting_suspension(span),
        ):
            span.set_attributes(tool_call_attributes(tool_name=call.name, call_id=call.id))
            try:
                tool = self._tool(call.name)
                args = tool.parse(_decode_arguments(call.arguments))
            except ToolError as err:
                # Invalid calls never execute; the model sees why.
                self._record_unrun(round_no, call, key, err)
                span.set_attribute("error.type", err.code)
                return
            ctx = self._context(call, key)
            if existing is not None and existing.status == StepStatus.RUNNING:
                if self._resume_interrupted(tool, ctx, round_no, call, key, existing):
                    return
            if tool.effect is ToolEffect.CHILD_JOB:
                self._child_job(tool, args, ctx, round_no, call, key, existing)
                return
            self._execute(tool, args, ctx, round_no, call, key, span)
        STEP_DURATION.labels("tool", call.name).observe(time.perf_counter() - started)

    def _tool(self, name: str) -> Tool[Any]:
        if self.who.tools is not None and name not in self.who.tools:
            offered = ", ".join(sorted(self.who.tools))
            raise ToolError(
                "unknown_tool",
                f"tool {name!r} is not offered here; available: {offered}",
                category="validation",
            )
        if McpOffering.is_mcp(name):
            return self.mcp.tool(name)
        return self.deps.registry.get(name)

    def _child_job(
        self,
        tool: Tool[Any],
        args: BaseModel,
        ctx: ToolContext,
        round_no: int,
        call: ToolCallSpec,
        key: str,
        existing: StepView | None,
    ) -> None:
        """A subagent: spawned once (suspending this job), its answer read on resume."""
        assert isinstance(tool, AgentTool)
        try:
            if existing is not None:
                result = child_outcome(self.deps, self.lease, existing)
            else:
                step = {
                    "key": key,
                    "kind": "tool",
                    "name": call.name,
                    "round_no": round_no,
                    "tool_call_id": call.id,
                    "arguments": args.model_dump(mode="json"),
                }
                self.events.emit("tool_start", {"tool_call_id": call.id, "name": call.name})
                offered = sorted(self.who.tools or self.deps.registry.names())
                # Raises StepSuspended once the child is committed: the parent waits.
                spawn_child(
                    self.deps, self.lease, tool=tool, args=args, ctx=ctx, step=step, offered=offered
                )
                return
        except ToolError as err:
            if existing is None:
                self._record_unrun(round_no, call, key, err)
            else:
                self._complete(round_no, call, key, status=StepStatus.FAILED, error=err)
            return
        self._complete(round_no, call, key, status=StepStatus.SUCCEEDED, result=result)

    def _context(self, call: ToolCallSpec, key: str) -> ToolContext:
        shared = self.who.workspace_session_id
        workspace = self.deps.settings.workspaces_dir / str(shared or self.who.session_id)
        workspace.mkdir(parents=True, exist_ok=True)
        return ToolContext(
            job_id=str(self.who.job_id),
            session_id=str(self.who.session_id),
            workspace_session_id=str(shared) if shared else None,
            user_id=str(self.who.user_id),
            project_id=str(self.who.project_id) if self.who.project_id else None,
            workspace=workspace,
            tool_call_id=call.id,
            step_key=key,
            emit=self.events.emit,
            sandbox=self.deps.sandbox,
            library=self.deps.library,
            db=self.deps.factory,
        )

    def _resume_interrupted(
        self,
        tool: Tool[Any],
        ctx: ToolContext,
        round_no: int,
        call: ToolCallSpec,
        key: str,
        existing: StepView,
    ) -> bool:
        """Handle a call that started before a crash; True when nothing more is to run."""
        if tool.effect is ToolEffect.SANDBOX:
            # Held protected changes (approvals/exec_hold.py) or a real interruption;
            # may suspend again while the approval is still pending.
            outcome = self.gate.resume_exec(ctx)
            if isinstance(outcome, ToolResult):
                self._complete(round_no, call, key, status=StepStatus.SUCCEEDED, result=outcome)
            else:
                self._complete(round_no, call, key, status=StepStatus.INTERRUPTED, error=outcome)
            return True
        if tool.effect is ToolEffect.EXTERNAL:
            # An external service's call that may have half-run: never repeated.
            interrupted = ToolError(
                "interrupted",
                f"{call.name} was interrupted (the worker stopped during the call); it may or "
                "may not have taken effect and was not run again: check before calling it again",
                category="interrupted",
            )
            self._complete(round_no, call, key, status=StepStatus.INTERRUPTED, error=interrupted)
            return True
        if tool.effect is ToolEffect.WORKSPACE_EDIT and existing.intent:
            if tool.is_applied(existing.intent, ctx):
                result = ToolResult(
                    content=f"{call.name} applied (confirmed after a worker restart)",
                    data={"recovered": True},
                )
                self._complete(round_no, call, key, status=StepStatus.SUCCEEDED, result=result)
                return True
        return False

    def _execute(
        self,
        tool: Tool[Any],
        args: BaseModel,
        ctx: ToolContext,
        round_no: int,
        call: ToolCallSpec,
        key: str,
        span: trace.Span,
    ) -> None:
        try:
            # May suspend the job (StepSuspended) until a human decides.
            approval = self.gate.check(tool=tool, args=args, ctx=ctx)
            intent = tool.intent(args, ctx) if tool.effect is ToolEffect.WORKSPACE_EDIT else None
            # A sandbox call's protected files, copied aside to hold what it changes.
            hold = self.gate.hold_for(tool, args, ctx, approval)
        except ToolError as err:  # e.g. an edit whose old_string is not there: nothing ran
            span.set_attribute("error.type", err.code)
            self._record_unrun(round_no, call, key, err)
            return
        fields: dict[str, Any] = {
            "key": key,
            "kind": "tool",
            "name": call.name,
            "round_no": round_no,
            "tool_call_id": call.id,
            "arguments": args.model_dump(mode="json"),
            "intent": intent,
        }
        # Re-running a read-only or idempotent tool after a crash is harmless, so
        # its step is written once, at the end; other effects record the start
        # first (with the intended post-state) so a resume knows what may have run.
        write_once = tool.effect in (ToolEffect.READ_ONLY, ToolEffect.IDEMPOTENT)
        if not write_once:
            edit = tool.effect is ToolEffect.WORKSPACE_EDIT
            if edit:
                failpoint("edit.before_hash_record")
            self._begin(**fields)
            if edit:
                failpoint("edit.after_hash_record")
        self.events.emit("tool_start", {"tool_call_id": call.id, "name": call.name})
        fresh = fields if write_once else None
        failpoint("tool.before_effect")
        try:
            if tool.effect is ToolEffect.WORKSPACE_EDIT:
                with fenced_effect(
                    self.deps.factory, self.lease, hold_limit_s=self.deps.settings.lease_ttl_s
                ):
                    result = self._run_with_retries(tool, args, ctx)
            else:
                result = self._run_with_retries(tool, args, ctx)
        except ToolError as err:
            failpoint("tool.after_effect")
            if hold is not None:
                err = hold.after_failure(err)
            span.set_attribute("error.type", err.code)
            self._complete(round_no, call, key, status=StepStatus.FAILED, error=err, fresh=fresh)
            return
        failpoint("tool.after_effect")
        if hold is not None:
            result = hold.after_success(result)  # suspends when protected files changed
        self._complete(round_no, call, key, status=StepStatus.SUCCEEDED, result=result, fresh=fresh)
        if approval is not None:
            self.gate.applied(approval)

    def _run_with_retries(self, tool: Tool[Any], args: BaseModel, ctx: ToolContext) -> ToolResult:
        return run_attempts(
            tool,
            args,
            ctx,
            attempts=self.deps.settings.tool_retry_attempts,
            base_s=self.deps.settings.tool_retry_base_s,
        )

    def _record_unrun(self, round_no: int, call: ToolCallSpec, key: str, err: ToolError) -> None:
        fresh = {
            "key": key,
            "kind": "tool",
            "name": call.name,
            "round_no": round_no,
            "tool_call_id": call.id,
            "arguments": {"raw": call.arguments[:10_000]},
        }
        self._complete(round_no, call, key, status=StepStatus.FAILED, error=err, fresh=fresh)

    def _complete(
        self,
        round_no: int,
        call: ToolCallSpec,
        key: str,
        *,
        status: str,
        result: ToolResult | None = None,
        error: ToolError | None = None,
        fresh: dict[str, Any] | None = None,
    ) -> None:
        """Record the outcome and the tool message; ``fresh`` holds the step's fields
        when it was never recorded as started (written once, here)."""
        stored: ToolStepResult | None = None
        if result is not None:
            content, stored = result.content, {"content": result.content, "data": result.data}
        else:
            assert error is not None
            content = f"ERROR [{error.code}] {error.message}"
        model_content = None
        if len(content) > MAX_TOOL_MESSAGE_CHARS:
            model_content = content[:MAX_TOOL_MESSAGE_CHARS] + "\n…[truncated]"
        error_dict = error.to_dict() if error else None
        outcome: dict[str, Any] = {"status": status, "result": stored, "error": error_dict}
        if fresh is not None:
            step = StepWrite(**fresh, **outcome)
        else:
            step = StepWrite(
                key=key,
                kind="tool",
                name=call.name,
                round_no=round_no,
                tool_call_id=call.id,
                count_run=False,
                **outcome,
            )
        message = MessageWrite(
            role="tool",
            content=content,
            model_content=model_content,
            tool_call_id=call.id,
            name=call.name,
        )
        done = record(
            self.deps.writer, self.lease, session_id=self.who.session_id, step=step, message=message
        )
        self.state.saw(done)
        if fresh is not None:
            self.state.started(**fresh, **outcome)
        else:
            self.state.finished(key, **outcome)
        assert done.message is not None
        self.state.history.append(done.message)
        self.events.emit(
            "tool_end",
            {
                "tool_call_id": call.id,
                "name": call.name,
                "status": status,
                "preview": content[:500],
            },
        )


def _decode_arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(
            "invalid_arguments",
            f"tool arguments are not valid JSON: {exc.msg} at position {exc.pos}",
            category="validation",
        ) from None
    if not isinstance(value, dict):
        raise ToolError(
            "invalid_arguments", "tool arguments must be a JSON object", category="validation"
        )
    return value
