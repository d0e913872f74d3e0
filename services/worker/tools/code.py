"""The ``python`` and ``bash`` tools: model-written code runs on sandbox workers.

Nothing runs in the agent worker. Each call goes through the sandbox port
(``sandbox.exec`` on the configured sandbox queue), keyed by the job and tool
call id so a redelivered message never runs the code twice. A non-zero
exit code is a normal result (the model reads the exit code and output);
timeouts, kills, refusals and an unreachable sandbox are :class:`ToolError`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.ports import SandboxRequest

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 180.0
# Queueing for a free sandbox slot plus a cold container start.
WAIT_MARGIN_S = 30.0
KILL_CODES = {"output_limit": "sandbox_output_limit", "workspace_quota": "sandbox_disk_quota"}


class PythonArgs(BaseModel):
    code: str = Field(min_length=1, max_length=200_000, description="Python 3 source to run")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description=f"seconds before the run is killed (default {DEFAULT_TIMEOUT_S:g})",
    )


class BashArgs(BaseModel):
    command: str = Field(min_length=1, max_length=100_000, description="bash command line")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        description=f"seconds before the run is killed (default {DEFAULT_TIMEOUT_S:g})",
    )


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024**2 else f"{n / 1024**2:.1f} MB"


def render(result: dict[str, Any]) -> str:
    """What the model reads: exit code, both streams (already capped), artifacts."""
    lines = [f"exit code: {result.get('exit_code')}"]
    for stream in ("stdout", "stderr"):
        text = result.get(stream) or ""
        if text:
            lines += [f"--- {stream} ---", text.rstrip("\n")]
    if result.get("truncated"):
        lines.append(
            f"[output truncated: stdout {result.get('stdout_bytes')} bytes, "
            f"stderr {result.get('stderr_bytes')} bytes in total]"
        )
    arts = result.get("artifacts") or []
    if arts:
        lines.append(
            "new or changed files (stored as job artifacts): "
            + ", ".join(f"{a['name']} ({_size(int(a['size']))}, {a['mime']})" for a in arts)
        )
    for skipped in result.get("artifacts_skipped") or []:
        lines.append(f"not stored: {skipped['name']} ({skipped['reason']})")
    if result.get("killed_reason") == "workspace_quota":
        lines.append(disk_note(result.get("disk") or {}))
    return "\n".join(lines)


def disk_note(disk: dict[str, Any]) -> str:
    """What a run stopped for disk took back, and where the workspace stands now."""
    return (
        f"disk: this run went past the workspace's disk limit; the "
        f"{disk.get('removed_files', 0)} file(s) it wrote past it "
        f"({_size(int(disk.get('removed_bytes', 0)))}) were removed or cut back. The workspace "
        f"holds {_size(int(disk.get('workspace_bytes', 0)))} of its "
        f"{_size(int(disk.get('workspace_cap_bytes', 0)))} cap; all your workspaces "
        f"{_size(int(disk.get('user_bytes', 0)))} of {_size(int(disk.get('user_cap_bytes', 0)))}."
    )


class SandboxTool(Tool):
    effect: ClassVar[ToolEffect] = ToolEffect.SANDBOX
    language: ClassVar[str]

    def source(self, args: BaseModel) -> str:
        raise ToolError("internal", "SandboxTool subclass must define source()")

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        if ctx.sandbox is None:
            raise ToolError(
                "sandbox_unavailable",
                "no sandbox is configured for this worker",
                category="sandbox",
            )
        timeout = min(getattr(args, "timeout", None) or DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
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

    def interpret(self, result: dict[str, Any], timeout: float) -> ToolResult:
        status = result.get("status")
        details = {k: result.get(k) for k in ("events", "sandbox_id", "backend", "duration_ms")}
        if status == "ok":
            return ToolResult(content=render(result), data=result)
        if status == "timeout":
            raise ToolError(
                "sandbox_timeout",
                f"killed after the {timeout:g}s time limit; output so far:\n{render(result)}",
                category="sandbox",
                details=details,
            )
        if status == "killed":
            reason = str(result.get("killed_reason"))
            raise ToolError(
                KILL_CODES.get(reason, "sandbox_killed"),
                f"killed ({reason.replace('_', ' ')}); output so far:\n{render(result)}",
                category="sandbox",
                details=details,
            )
        error = result.get("error") or {}
        code = str(error.get("code") or "sandbox_failed")
        category = "policy" if status == "refused" else "sandbox"
        raise ToolError(
            code,
            str(error.get("message") or f"sandbox status {status!r}"),
            category=category,
            retryable=code == "sandbox_unavailable",
            details=details,
        )


class PythonTool(SandboxTool):
    name = "python"
    description = (
        "Run Python 3 code in an isolated sandbox (numpy, scipy, sympy, matplotlib, pandas, "
        "python-control; no network unless the project allows it). The session workspace is "
        "the working directory (/workspace); files written there (plots, CSVs) come back as "
        "artifacts. Print what you need to see."
    )
    args_model = PythonArgs
    language = "python"

    def source(self, args: BaseModel) -> str:
        assert isinstance(args, PythonArgs)
        return args.code


class BashTool(SandboxTool):
    name = "bash"
    description = (
        "Run a bash command in the isolated sandbox, in the session workspace (/workspace). "
        "Destructive system commands are refused."
    )
    args_model = BashArgs
    language = "bash"

    def source(self, args: BaseModel) -> str:
        assert isinstance(args, BashArgs)
        return args.command


def code_tools() -> list[Tool]:
    return [PythonTool(), BashTool()]
