"""The ``python`` and ``bash`` tools: model-written code runs on sandbox workers.

Nothing runs in the agent worker. Each call goes through the sandbox port
(``sandbox.exec`` on the configured sandbox queue), keyed by the job and tool
call id so a redelivered message never runs the code twice. A non-zero
exit code is a normal result (the model reads the exit code and output);
timeouts, kills, refusals and an unreachable sandbox are :class:`ToolError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, Field

from services.common.contracts.sandbox import (
    DiskReport,
    SandboxError,
    SandboxOutcome,
    SandboxResult,
)
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.ports import SandboxRequest

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 180.0
# Queueing for a free sandbox slot plus a cold container start.
WAIT_MARGIN_S = 30.0
KILL_CODES = {"output_limit": "sandbox_output_limit", "workspace_quota": "sandbox_disk_quota"}
_TIMEOUT_HELP = f"seconds before the run is killed (default {DEFAULT_TIMEOUT_S:g})"


class SandboxArgs(BaseModel):
    """The base of every sandbox tool's arguments, which all take a ``timeout``.

    Each subclass declares the field itself, after its own: pydantic puts a base's
    fields first, and the model reads ``code`` before ``timeout`` in the schema."""

    if TYPE_CHECKING:
        timeout: float | None


class PythonArgs(SandboxArgs):
    code: str = Field(min_length=1, max_length=200_000, description="Python 3 source to run")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description=_TIMEOUT_HELP)


class BashArgs(SandboxArgs):
    command: str = Field(min_length=1, max_length=100_000, description="bash command line")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description=_TIMEOUT_HELP)


SandboxArgsT = TypeVar("SandboxArgsT", bound=SandboxArgs)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024**2 else f"{n / 1024**2:.1f} MB"


def render(result: SandboxResult) -> str:
    """What the model reads: exit code, both streams (already capped), artifacts."""
    lines = [f"exit code: {result.exit_code}"]
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            lines += [f"--- {stream} ---", text.rstrip("\n")]
    if result.truncated:
        lines.append(
            f"[output truncated: stdout {result.stdout_bytes} bytes, "
            f"stderr {result.stderr_bytes} bytes in total]"
        )
    arts = result.artifacts or []
    if arts:
        lines.append(
            "new or changed files (stored as job artifacts): "
            + ", ".join(f"{a.name} ({_size(a.size)}, {a.mime})" for a in arts)
        )
    for skipped in result.artifacts_skipped or []:
        lines.append(f"not stored: {skipped.name} ({skipped.reason})")
    if result.killed_reason == "workspace_quota":
        lines.append(disk_note(result.disk or DiskReport()))
    return "\n".join(lines)


def disk_note(disk: DiskReport) -> str:
    """What a run stopped for disk took back, and where the workspace stands now."""
    return (
        f"disk: this run went past the workspace's disk limit; the "
        f"{disk.removed_files} file(s) it wrote past it "
        f"({_size(disk.removed_bytes)}) were removed or cut back. The workspace "
        f"holds {_size(disk.workspace_bytes)} of its "
        f"{_size(disk.workspace_cap_bytes)} cap; all your workspaces "
        f"{_size(disk.user_bytes)} of {_size(disk.user_cap_bytes)}."
    )


class SandboxTool(Tool[SandboxArgsT]):
    effect: ClassVar[ToolEffect] = ToolEffect.SANDBOX
    language: ClassVar[str]

    def source(self, args: SandboxArgsT) -> str:
        raise ToolError("internal", "SandboxTool subclass must define source()")

    def run(self, args: SandboxArgsT, ctx: ToolContext) -> ToolResult:
        if ctx.sandbox is None:
            raise ToolError(
                "sandbox_unavailable",
                "no sandbox is configured for this worker",
                category="sandbox",
            )
        timeout = min(args.timeout or DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
        request = SandboxRequest(
            job_id=ctx.job_id,
            tool_call_id=ctx.tool_call_id,
            session_id=ctx.workspace_session_id or ctx.session_id,
            project_id=ctx.project_id,
            language=self.language,
            code=self.source(args),
            timeout_s=timeout,
        )
        result = ctx.sandbox.execute(request, wait_s=timeout + WAIT_MARGIN_S)
        return self.interpret(result, timeout)

    def interpret(self, result: SandboxResult, timeout: float) -> ToolResult:
        status = result.status
        details = {
            "events": result.events,
            "sandbox_id": result.sandbox_id,
            "backend": result.backend,
            "duration_ms": result.duration_ms,
        }
        if status == SandboxOutcome.OK:
            return ToolResult(content=render(result), data=result.as_sent())
        if status == SandboxOutcome.TIMEOUT:
            raise ToolError(
                "sandbox_timeout",
                f"killed after the {timeout:g}s time limit; output so far:\n{render(result)}",
                category="sandbox",
                details=details,
            )
        if status == SandboxOutcome.KILLED:
            reason = str(result.killed_reason)
            raise ToolError(
                KILL_CODES.get(reason, "sandbox_killed"),
                f"killed ({reason.replace('_', ' ')}); output so far:\n{render(result)}",
                category="sandbox",
                details=details,
            )
        error = result.error or SandboxError()
        code = error.code or "sandbox_failed"
        category = "policy" if status == SandboxOutcome.REFUSED else "sandbox"
        raise ToolError(
            code,
            error.message or f"sandbox status {status!r}",
            category=category,
            retryable=code == "sandbox_unavailable",
            details=details,
        )


class PythonTool(SandboxTool[PythonArgs]):
    name = "python"
    description = (
        "Run Python 3 code in an isolated sandbox (numpy, scipy, sympy, matplotlib, pandas, "
        "python-control; no network unless the project allows it). The session workspace is "
        "the working directory (/workspace); files written there (plots, CSVs) come back as "
        "artifacts. Print what you need to see."
    )
    args_model = PythonArgs
    language = "python"

    def source(self, args: PythonArgs) -> str:
        return args.code


class BashTool(SandboxTool[BashArgs]):
    name = "bash"
    description = (
        "Run a bash command in the isolated sandbox, in the session workspace (/workspace). "
        "Destructive system commands are refused."
    )
    args_model = BashArgs
    language = "bash"

    def source(self, args: BashArgs) -> str:
        return args.command


def code_tools() -> list[Tool[Any]]:
    return [PythonTool(), BashTool()]
