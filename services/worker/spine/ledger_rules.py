"""What the next step of a turn depends on, read from its ledger alone."""

from __future__ import annotations

from services.common.contracts.statuses import StepStatus
from services.common.contracts.steps import LlmStepError
from services.worker.spine.ledger import StepView


def error_text(error: LlmStepError | None) -> str:
    """What a failed llm step said, for the job's error."""
    return (error.get("message") if error else None) or "the model call failed"


def trailing_tool_failures(steps: dict[str, StepView]) -> int:
    """Tool steps that failed in a row at the end of the ledger."""
    count = 0
    for step in reversed(list(steps.values())):
        if step.kind != "tool":
            continue
        if step.status != StepStatus.FAILED:
            break
        count += 1
    return count


def rounds_since_todo(steps: dict[str, StepView]) -> int:
    """Tool rounds since the last one that used the todo tool (for the reminder)."""
    tool_rounds = sorted({s.round for s in steps.values() if s.kind == "tool"})
    todo_rounds = {s.round for s in steps.values() if s.kind == "tool" and s.name == "todo"}
    since = 0
    for r in reversed(tool_rounds):
        if r in todo_rounds:
            break
        since += 1
    return since
