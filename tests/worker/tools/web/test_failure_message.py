"""The stop message after consecutive failed tool calls names each failure."""

from __future__ import annotations

from typing import Any

from services.worker.spine.ledger import StepView
from services.worker.spine.tool_failures import (
    consecutive_failures_reason,
    trailing_failed_tool_steps,
)


def step(key: str, name: str, status: str, error: dict[str, Any] | None = None) -> StepView:
    kind = "llm" if key.startswith("llm") else "tool"
    return StepView(key, kind, name, 0, None, status, None, None, None, error, 1)


def test_only_the_trailing_run_of_failures_is_named() -> None:
    steps = {
        s.key: s
        for s in [
            step("tool:0:a", "web_fetch", "failed", {"code": "old", "message": "earlier"}),
            step("tool:0:b", "todo", "succeeded"),
            step("llm:1", "sim", "succeeded"),
            step("tool:1:c", "web_fetch", "failed", {"code": "url_refused", "message": "loop"}),
            step("llm:2", "sim", "succeeded"),
            step(
                "tool:2:d",
                "web_search",
                "failed",
                {"code": "not_configured", "message": "x " * 200},
            ),
        ]
    }
    assert [s.key for s in trailing_failed_tool_steps(steps)] == ["tool:1:c", "tool:2:d"]
    reason = consecutive_failures_reason(steps, 2)
    assert reason.startswith(
        "stopped after 2 consecutive failed tool calls: web_fetch [url_refused] loop; "
        "web_search [not_configured] x x"
    )
    assert "old" not in reason and reason.endswith("…")
