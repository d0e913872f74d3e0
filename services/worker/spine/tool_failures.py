"""Why a job stopped after consecutive failed tool calls, in words a user can act on.

The message names each failed call of the run — tool, error code and the
start of its message — so the job's ``error`` says what went wrong without
opening the steps (e.g. ``web_fetch [url_refused] …; web_search [not_configured] …``).
"""

from __future__ import annotations

from services.common.contracts.statuses import StepStatus
from services.worker.spine.ledger import StepView, tool_step_error

MESSAGE_CHARS = 120


def trailing_failed_tool_steps(steps: dict[str, StepView]) -> list[StepView]:
    """The tool steps that failed in a row at the end of the ledger, oldest first."""
    run: list[StepView] = []
    for step in reversed(list(steps.values())):
        if step.kind != "tool":
            continue
        if step.status != StepStatus.FAILED:
            break
        run.append(step)
    return run[::-1]


def consecutive_failures_reason(steps: dict[str, StepView], limit: int) -> str:
    """``stopped after N consecutive failed tool calls: name [code] message; …``."""
    failed = trailing_failed_tool_steps(steps)
    named = "; ".join(_describe(step) for step in failed[-limit:])
    return f"stopped after {limit} consecutive failed tool calls: {named}"


def _describe(step: StepView) -> str:
    error = tool_step_error(step)
    # Subscripts, so a renamed key fails mypy here; guarded, so an odd row still reads.
    code = (error["code"] if error and "code" in error else None) or "error"
    message = " ".join(str(error["message"] if error and "message" in error else "").split())
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "…"
    return f"{step.name} [{code}] {message}".rstrip()
