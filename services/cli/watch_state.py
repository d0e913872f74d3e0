"""What a watcher knows about a job, folded from its event stream.

Both views of `leaflab watch` (plain lines, the rich live view) read this one
model, so they never disagree about a count. Times come from the events' own
ids (Redis stream ids start with the milliseconds at which the worker
published), so a tool's duration and a survey's ETA are right even when the
events are replayed long after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.common.contracts.events import (
    Final,
    JobEvent,
    Model,
    ModelRetry,
    Progress,
    Status,
    Todo,
    Token,
    ToolEnd,
    ToolStart,
    parse_event,
)
from services.common.contracts.statuses import PARKED, TERMINAL, JobStatus, StepStatus
from services.common.surveys import STAGES

__all__ = ["BUDGET_EXHAUSTED", "PARKED", "TERMINAL", "WAITING_MODEL", "WatchState"]

# Not terminal: every model endpoint is down; the job is parked and resumes by itself.
WAITING_MODEL = JobStatus.WAITING_MODEL
# Not terminal either: parked until an admin raises the budget (leaflab admin budget set).
BUDGET_EXHAUSTED = JobStatus.BUDGET_EXHAUSTED
# Events only a running job sends: one after a parked status means the job resumed,
# even when no status event says so (a budget raise requeues the job silently).
ACTIVITY = ("token", "tool_start", "tool_end", "model", "model_retry", "todo", "progress")


def parse_watched(kind: str, data: object) -> JobEvent | None:
    """The typed event, or None for one this CLI does not know or that breaks its
    contract (a newer server's event): a watcher shows what it can and reads on."""
    if not isinstance(data, dict):
        return None
    try:
        return parse_event(kind, data)
    except ValueError:  # pydantic.ValidationError is one
        return None


def event_ms(event: dict[str, Any]) -> int | None:
    """When the event was published (ms since the epoch), from an id like '1700000000000-0'."""
    head, _, _ = str(event.get("id") or "").partition("-")
    return int(head) if head.isdigit() else None


@dataclass
class ToolCall:
    name: str
    started_ms: int | None
    ended_ms: int | None = None
    status: str = StepStatus.RUNNING  # then the tool_end event's word

    @property
    def seconds(self) -> float | None:
        if self.started_ms is None or self.ended_ms is None:
            return None
        return max(self.ended_ms - self.started_ms, 0) / 1000


@dataclass
class Bar:
    """One survey counter (papers read, sections written) and what its ETA is based on."""

    done: int = 0
    total: int = 0
    first_ms: int | None = None  # the first time this counter was seen with work to do
    first_done: int = 0
    last_ms: int | None = None

    def observe(self, done: int, total: int, at_ms: int | None) -> None:
        if self.first_ms is None and total > 0 and done < total:
            self.first_ms, self.first_done = at_ms, done
        self.done, self.total, self.last_ms = done, total, at_ms

    def eta_s(self) -> float | None:
        """Seconds left at the rate seen so far; None before any progress."""
        if self.first_ms is None or self.last_ms is None or self.done <= self.first_done:
            return None
        rate = (self.done - self.first_done) / max(self.last_ms - self.first_ms, 1)
        return max(self.total - self.done, 0) / rate / 1000


@dataclass
class WatchState:
    job_id: str = ""
    kind: str = ""
    status: str = JobStatus.QUEUED
    stage: str | None = None
    batch_progress: dict[str, Any] | str | None = None  # the batch's task counts
    text: str = ""  # the answer streamed since the last tool call
    in_text: bool = False
    tools: list[ToolCall] = field(default_factory=list)
    running: dict[str, ToolCall] = field(default_factory=dict)
    last_ended: ToolCall | None = None
    todo: list[dict[str, Any]] = field(default_factory=list)
    papers: Bar = field(default_factory=Bar)
    sections: Bar = field(default_factory=Bar)
    papers_found: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    final: str | None = None
    result: dict[str, Any] | None = None  # the final event's result (a batch's summary)
    error: str | None = None
    first_ms: int | None = None
    last_ms: int | None = None
    previous: str | None = None  # the type of the event before the latest one
    current: str | None = None
    model: str | None = None  # the model that answered the latest call
    model_changed: bool = False  # the latest `model` event named another model than before
    retries: int = 0  # model calls retried after streaming part of an answer
    dropped: str = ""  # the partial answer the latest retry threw away
    waiting: str | None = None  # why the job waits for the model endpoint (status waiting_model)
    resumed: str | None = None  # the parked status the latest event brought the job out of
    typed: JobEvent | None = None  # the latest event, parsed; None: unknown or malformed

    def apply(self, event: dict[str, Any]) -> None:
        kind, data = event.get("event"), event.get("data") or {}
        at = event_ms(event)
        self.previous, self.current = self.current, str(kind)
        self.resumed = None
        if kind in ACTIVITY and self.status in PARKED:
            self.resumed, self.status, self.waiting = self.status, JobStatus.RUNNING, None
        if at is not None:
            self.first_ms = self.first_ms if self.first_ms is not None else at
            self.last_ms = at
        self.typed = parse_watched(str(kind), data)
        if self.typed is not None:
            self._fold(self.typed, at)

    def _fold(self, event: JobEvent, at: int | None) -> None:
        match event:
            case Token():
                self.text += event.text
                self.in_text = True
            case ToolStart():
                self.in_text, self.text = False, ""
                call = ToolCall(str(event.name), at)
                self.tools.append(call)
                self.running[str(event.tool_call_id or len(self.tools))] = call
            case ToolEnd():
                ended = self._close(str(event.tool_call_id or ""))
                if ended is not None:
                    ended.ended_ms, ended.status = at, str(event.status)
                self.last_ended = ended
            case Todo():
                self.todo = list(event.items)
            case Model():
                name = event.model or None
                self.model_changed, self.model = name != self.model, name
            case ModelRetry():
                # The failed attempt's text is not part of the answer: the retry starts over.
                self.retries += 1
                self.dropped, self.text = self.text, ""
            case Status():
                self._status(event)
            case Progress():
                self._progress(event, at)
            case Final():
                self.final = self.status = str(event.status)
                self.result = event.result if isinstance(event.result, dict) else None
                self.error = event.error or self.error

    def _status(self, event: Status) -> None:
        before = self.status
        self.status = str(event.status)
        if before in PARKED and self.status not in PARKED:
            self.resumed = before
        self.batch_progress = event.progress or self.batch_progress
        if self.status == WAITING_MODEL:
            self.waiting = event.error or event.message or None
        else:
            self.waiting = None
            self.error = event.error or self.error

    def _progress(self, event: Progress, at: int | None) -> None:
        self.stage = str(event.stage or self.stage or "")
        found = _count(event.papers_found)
        self.papers_found = found
        self.papers.observe(_count(event.papers_read), found, at)
        self.sections.observe(_count(event.sections_written), _count(event.sections_total), at)
        if event.cost_usd is not None:
            self.cost_usd = max(self.cost_usd, _money(event.cost_usd))

    def _close(self, tool_call_id: str) -> ToolCall | None:
        if tool_call_id in self.running:
            return self.running.pop(tool_call_id)
        # A tool_end without a known id closes the most recent open call.
        return self.running.pop(next(reversed(self.running))) if self.running else None

    def usage_from(self, job: dict[str, Any]) -> None:
        """Take tokens and cost from the job's row (updated after every model call)."""
        usage = job.get("usage") or {}
        self.kind = str(job.get("kind") or self.kind)
        self.input_tokens = _count(usage.get("input_tokens"))
        self.output_tokens = _count(usage.get("output_tokens"))
        self.cached_tokens = _count(usage.get("cached_tokens"))
        self.cost_usd = max(self.cost_usd, _money(job.get("cost_usd")))

    @property
    def todo_done(self) -> int:
        return sum(1 for i in self.todo if i.get("status") == "completed")

    @property
    def stage_label(self) -> str | None:
        if not self.stage:
            return None
        if self.stage in STAGES:
            return f"{self.stage} ({STAGES.index(self.stage) + 1}/{len(STAGES)})"
        return self.stage


def _count(value: object) -> int:
    try:
        return max(int(value), 0)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0


def _money(value: object) -> float:
    try:
        return max(float(value), 0.0)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
