"""The live view of `leaflab watch` on a terminal (rich).

Finished things scroll up like a transcript, printed above the live area: the
streamed answer line by line, each tool call with its result and duration,
approvals and budget notices. The live area at the bottom redraws in place:
status and stage, running tools with a spinner, the todo list, survey bars
with an ETA, and tokens and cost so far. Tokens and cost come from the job's
row, which the worker updates after every model call; it is read again at most
twice a second, on events that follow a model call (never per token).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import click
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from services.cli.client import LeaflabClient
from services.cli.term.literal import literal
from services.cli.watch_state import BUDGET_EXHAUSTED, WAITING_MODEL, Bar, WatchState
from services.cli.watch_text import (
    BUDGET_PAUSE,
    batch_progress_text,
    final_line,
    format_seconds,
    model_line,
    paused_for_budget,
    report_error,
    resumed_line,
    retry_marker,
    unseen_answer,
    usage_line,
    waiting_line,
)
from services.common.contracts.statuses import JobStatus, StepStatus

STATUS_STYLE: dict[str, str] = {
    JobStatus.SUCCEEDED: "bold green",
    JobStatus.FAILED: "bold red",
    JobStatus.CANCELLED: "bold yellow",
    JobStatus.BUDGET_EXHAUSTED: "bold yellow",  # parked until a raise, not failed
    JobStatus.WAITING_APPROVAL: "bold magenta",
    JobStatus.RUNNING: "bold cyan",
    JobStatus.WAITING_MODEL: "bold yellow",
}
TODO_MARK = {"completed": ("✓", "green"), "in_progress": ("▶", "yellow")}
USAGE_REFRESH_S = 0.5
TODO_SHOWN = 12


class LiveWatch:
    def __init__(
        self, client: LeaflabClient, job_id: str, console: Console, *, wait_budget: bool = True
    ) -> None:
        self.client, self.job_id, self.console = client, job_id, console
        self.wait_budget = wait_budget
        self.state = WatchState(job_id=job_id)
        self.partial = ""  # streamed text after the last line break, shown live
        self._lock = threading.Lock()  # the refresh thread renders while events arrive
        self._polled = 0.0

    def run(self) -> dict[str, Any]:
        self._refresh_usage(force=True)
        live = Live(
            console=self.console,
            get_renderable=self._view,
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        with live:
            for event in self.client.events(self.job_id):
                self._on_event(event)
                if paused_for_budget(event) and not self.wait_budget:
                    break
            with self._lock:
                self._flush_text()
        job: dict[str, Any] = self.client.request("GET", f"/v1/jobs/{self.job_id}")
        self.state.usage_from(job)
        self.state.status = str(job.get("status") or self.state.status)
        self.console.print(summary(self.state))
        report_error(job)
        return job

    def _on_event(self, event: dict[str, Any]) -> None:
        kind, data = event.get("event"), event.get("data") or {}
        with self._lock:
            if kind == "model_retry":
                self.partial = ""  # the failed attempt's unfinished line is not the answer
            elif kind != "token":
                self._flush_text()
            self.state.apply(event)
            # Before the text: a `resumed` marker goes above the answer it resumed.
            for line in transcript(event, self.state):
                self.console.print(line)
            if kind == "token":
                self.partial += literal(data.get("text", ""), multiline=True)
                *lines, self.partial = self.partial.split("\n")
                for done in lines:
                    self.console.print(Text(done))
        if kind not in ("token", "todo"):
            self._refresh_usage(force=kind == "final")

    def _flush_text(self) -> None:
        if self.partial:
            self.console.print(Text(self.partial))
            self.partial = ""

    def _refresh_usage(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._polled < USAGE_REFRESH_S:
            return
        self._polled = time.monotonic()
        try:
            job = self.client.request("GET", f"/v1/jobs/{self.job_id}")
        except click.ClickException:
            return  # a missed refresh only leaves the figures a moment older
        with self._lock:
            self.state.usage_from(job)
            if self.state.current is None:
                self.state.status = str(job.get("status") or self.state.status)

    def _view(self) -> RenderableType:
        with self._lock:
            return view(self.state, self.partial, now_ms=int(time.time() * 1000))


def transcript(event: dict[str, Any], st: WatchState) -> list[Text]:
    """Lines to print above the live area for ``event`` (already folded into ``st``)."""
    lines = _event_lines(event, st)
    if st.resumed and event.get("event") != "status":
        return [Text(resumed_line(st), "bold cyan"), *lines]
    return lines


def _event_lines(event: dict[str, Any], st: WatchState) -> list[Text]:
    kind, data = event.get("event"), event.get("data") or {}
    if kind == "tool_end" and st.last_ended is not None:
        call = st.last_ended
        ok = call.status == StepStatus.SUCCEEDED
        took = f" ({call.seconds:.2f}s)" if call.seconds is not None else ""
        return [
            Text.assemble(
                ("  ✓ " if ok else "  ✗ ", "green" if ok else "red"),
                (literal(call.name), "bold"),
                f" {literal(call.status)}{took}",
            )
        ]
    if kind == "approval":
        files = ", ".join(data.get("files") or []) or data.get("tool", "")
        what = f"  approval {data.get('approval_id')} {data.get('status')}: {files}"
        return [Text(literal(what), style="magenta")]
    if kind == "budget":
        message = data.get("message") or f"budget past its soft limit: now {data.get('model')}"
        return [Text(f"  ({literal(message)})", style="yellow")]
    if kind == "events_lost":
        return [Text("  (some live events were lost; figures are read from the job)", "yellow")]
    if kind == "model" and st.model_changed:
        return [Text("  " + model_line(st), "dim")]
    if kind == "model_retry":
        return [Text("  " + retry_marker(data, st), "yellow")]
    if kind == "status" and st.status == WAITING_MODEL:
        return [Text(waiting_line(st), "yellow")]
    if kind == "status" and st.status == BUDGET_EXHAUSTED:
        return [Text(f"[{BUDGET_EXHAUSTED}] {BUDGET_PAUSE}", "bold yellow")]
    if kind == "status" and st.resumed:
        return [Text(f"[{literal(st.status)}]", "bold cyan")]
    if kind == "final":
        answer = unseen_answer(st)
        return [Text(answer)] if answer else []
    return []


def view(st: WatchState, partial: str, *, now_ms: int) -> RenderableType:
    """The live area: what is happening now."""
    parts: list[RenderableType] = []
    if partial:
        parts.append(Text(partial + "▌"))
    for call in st.running.values():
        since = max(now_ms - call.started_ms, 0) / 1000 if call.started_ms else 0.0
        parts.append(Spinner("dots", Text(f"{literal(call.name)} running {since:.1f}s")))
    if st.todo:
        parts.append(todo_table(st))
    if st.stage:
        parts.append(survey_bars(st))
    parts.append(header(st, now_ms))
    return Group(*parts)


def header(st: WatchState, now_ms: int) -> Group:
    end = st.last_ms if st.final else now_ms
    elapsed = max(end - st.first_ms, 0) / 1000 if st.first_ms is not None and end else 0.0
    line = Text.assemble(
        (f"job {literal(st.job_id)}", "bold"),
        f" {literal(st.kind)} · ",
        (literal(st.status), STATUS_STYLE.get(st.status, "bold")),
    )
    if st.status == WAITING_MODEL:
        line.append(" · waiting for the model endpoint…", "yellow")
    if st.status == BUDGET_EXHAUSTED:
        line.append(" · paused until an admin raises the budget", "yellow")
    if st.model:
        line.append(f" · model {literal(st.model)}")
    if st.batch_progress:
        line.append(f" · {batch_progress_text(st.batch_progress)}")
    if st.stage_label:
        line.append(f" · stage {literal(st.stage_label)}")
    line.append(f" · {format_seconds(elapsed)} · {len(st.tools)} tool call(s)")
    return Group(line, Text(usage_line(st), "dim"))


def todo_table(st: WatchState) -> Group:
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(overflow="ellipsis", no_wrap=True)
    for item in st.todo[:TODO_SHOWN]:
        mark, style = TODO_MARK.get(str(item.get("status")), ("○", "dim"))
        table.add_row(Text(mark, style), Text(literal(item.get("content"))))
    if len(st.todo) > TODO_SHOWN:
        table.add_row("", Text(f"… {len(st.todo) - TODO_SHOWN} more", "dim"))
    return Group(Text.assemble(("todo", "bold"), f" {st.todo_done}/{len(st.todo)}"), table)


def survey_bars(st: WatchState) -> Table:
    table = Table.grid(padding=(0, 1))
    for _ in range(4):
        table.add_column(no_wrap=True)
    for label, bar in (("papers read", st.papers), ("sections written", st.sections)):
        if not bar.total:
            continue  # not known yet (sections are planned at the outline stage)
        meter = ProgressBar(total=bar.total, completed=bar.done, width=30)
        table.add_row(Text(label), meter, Text(f"{bar.done}/{bar.total}"), Text(eta_text(bar)))
    return table


def eta_text(bar: Bar) -> str:
    if bar.total and bar.done >= bar.total:
        return "done"
    eta = bar.eta_s()
    return f"ETA {format_seconds(eta)}" if eta is not None else "ETA –"


def summary(st: WatchState) -> Text:
    status = st.final or st.status
    head = f"[{literal(status)}]"
    return Text.assemble(
        (head, STATUS_STYLE.get(status, "bold")),
        f"{final_line(st).removeprefix(head)} · {usage_line(st)}",
    )
