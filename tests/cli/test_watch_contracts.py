"""`leaflab watch` folds the job events through the contracts' union.

The plain lines a watcher prints for a stream, event by event (the same
``render_event`` the command runs on what the API streams): a terminal status
is left to the final line, a parked one is not terminal, and an event this CLI
does not know, or one that breaks its contract, prints nothing and breaks nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.cli.watch import render_event
from services.cli.watch_state import WatchState

Event = tuple[str, dict[str, Any]]


def watch(events: list[Event]) -> tuple[list[str], WatchState]:
    """What a watcher prints for ``events`` (one second apart), and what it knows after."""
    state: dict[str, Any] = {}
    lines = []
    for second, (kind, data) in enumerate(events):
        text = render_event(
            {"id": f"{1_700_000_000_000 + second * 1000}-0", "event": kind, "data": data}, state
        )
        if text:
            lines.append(text.strip())
    return lines, state["watch"]


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_a_terminal_status_is_said_once_by_the_final_line(status: str) -> None:
    lines, st = watch(
        [
            ("status", {"status": "running"}),
            ("status", {"status": status}),
            ("final", {"status": status}),
        ]
    )
    assert lines[0] == "[running]"
    assert not any(line.startswith(f"[{status}]") and "tool call" not in line for line in lines), (
        lines
    )
    assert st.final == st.status == status


def test_a_budget_pause_is_not_terminal_and_activity_resumes_it() -> None:
    lines, st = watch(
        [("status", {"status": "budget_exhausted", "error": "spent"}), ("token", {"text": "more"})]
    )
    assert lines[0].startswith("[budget_exhausted]")
    assert st.status == "running" and st.final is None


def test_unknown_and_malformed_events_print_nothing_and_change_nothing() -> None:
    lines, st = watch(
        [
            ("status", {"status": "running"}),
            ("from_a_newer_server", {"anything": 1}),
            ("status", {"status": "not-a-status"}),
            ("token", {"text": 42}),
            ("token", {"text": "ok"}),
        ]
    )
    assert st.status == "running" and st.text == "ok"
    assert lines == ["[running]", "ok"]


def test_tool_calls_and_survey_progress_are_folded_typed() -> None:
    _, st = watch(
        [
            ("tool_start", {"tool_call_id": "c1", "name": "python"}),
            ("tool_end", {"tool_call_id": "c1", "name": "python", "status": "succeeded"}),
            ("progress", {"stage": "read", "papers_found": 4, "papers_read": 2, "cost_usd": 0.25}),
        ]
    )
    assert [(t.name, t.status, t.seconds) for t in st.tools] == [("python", "succeeded", 1.0)]
    assert (st.papers.done, st.papers.total, st.cost_usd) == (2, 4, 0.25)
