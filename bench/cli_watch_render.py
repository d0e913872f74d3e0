"""Benchmark `leaflab watch`: CPU per event of the rich live view vs plain lines.

Run: .venv/bin/python -m bench.cli_watch_render [--quick]
A synthetic stream (a survey's progress events, tool calls with todo updates and
streamed answer text, in the proportions of a long agent turn) is replayed
through both views of services/cli/watch.py into an in-memory 120-column
terminal: the plain lines (the baseline: what a pipe gets) and the rich live
view (transcript above, live area redrawn below, its 8/s refresh thread
running). Figures (one JSON line at the end): CPU microseconds per event
(``time.process_time``, which counts the refresh thread too), events per second
of CPU, and bytes written per event; and ``live_frame``: CPU per redraw of the
live area at its fullest (todo list, survey bar, a running tool), and the share
of one core the 8-per-second refresh costs while a job is quiet. The worker
coalesces tokens into at most one event per flush interval, so a view costing
well under a millisecond per event never falls behind a job.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from services.cli.watch import watch_job
from services.cli.watch_live import view
from services.cli.watch_state import WatchState

T0 = 1_700_000_000_000


def synthetic_events(rounds: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"event": "status", "data": {"status": "running"}}]
    for r in range(rounds):
        progress = {"stage": "read", "papers_found": rounds, "papers_read": r, "cost_usd": r / 1e3}
        events.append({"event": "progress", "data": progress})
        events.append({"event": "tool_start", "data": {"tool_call_id": f"c{r}", "name": "glob"}})
        items = [
            {"content": f"step {i} of the plan", "status": "completed" if i < r % 8 else "pending"}
            for i in range(8)
        ]
        events.append({"event": "todo", "data": {"items": items}})
        events.append(
            {"event": "tool_end", "data": {"tool_call_id": f"c{r}", "status": "succeeded"}}
        )
        for t in range(20):  # about a sentence per token event, a line break now and then
            text = f"word{t} and some more words " + ("\n" if t % 7 == 6 else "")
            events.append({"event": "token", "data": {"text": text}})
    events.append({"event": "final", "data": {"status": "succeeded"}})
    for i, event in enumerate(events):
        event["id"] = f"{T0 + i * 10}-0"
    return events


class ReplayClient:
    """Stands in for LeaflabClient: the stream and the job row, from memory."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._events = events

    def events(self, job_id: str) -> Iterator[dict[str, Any]]:
        yield from self._events

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        usage = {"input_tokens": 12_345, "output_tokens": 678, "cached_tokens": 0}
        job = {"id": "bench", "kind": "survey", "status": "succeeded", "error": None}
        return {**job, "usage": usage, "cost_usd": 0.0123}


def measure(events: list[dict[str, Any]], *, terminal: bool, repeats: int) -> dict[str, float]:
    per_event: list[float] = []
    written = 0
    for _ in range(repeats):
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=terminal, width=120, color_system="256")
        started = time.process_time()
        watch_job(ReplayClient(events), "bench", console=console)  # type: ignore[arg-type]
        per_event.append((time.process_time() - started) / len(events))
        written = len(buf.getvalue().encode())
    best = min(per_event)
    return {
        "us_per_event": round(best * 1e6, 1),
        "events_per_cpu_s": round(1 / best),
        "bytes_per_event": round(written / len(events), 1),
    }


def frame_cost(events: list[dict[str, Any]], *, frames: int) -> dict[str, float]:
    """CPU per redraw of the live area in its fullest state (todo, bars, a running tool)."""
    st = WatchState(job_id="bench", kind="survey")
    for event in events[:-2]:  # stop before the last tool ends and the job finishes
        st.apply(event)
    console = Console(file=io.StringIO(), force_terminal=True, width=120, color_system="256")
    started = time.process_time()
    for i in range(frames):
        console.print(view(st, "a partial line of text", now_ms=T0 + i))
    ms = (time.process_time() - started) / frames * 1e3
    return {"ms_per_frame": round(ms, 3), "cpu_share_at_8_fps": round(ms * 8 / 1e3, 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, repeats = (10, 1) if args.quick else (100, 3)
    events = synthetic_events(rounds)
    figures = {
        "events": len(events),
        "plain_baseline": measure(events, terminal=False, repeats=repeats),
        "rich_live": measure(events, terminal=True, repeats=repeats),
        "live_frame": frame_cost(events, frames=50 if args.quick else 1000),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
