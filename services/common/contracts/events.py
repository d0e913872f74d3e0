"""The events of a job's stream (``leaflab:job:<id>``), one pydantic model per type.

On the wire an event is ``{type, data}`` (a Redis stream entry, then an SSE frame
whose ``event:`` is the type); here it is one flat model, ``type`` beside the
data's fields, and ``JobEvent`` is their union discriminated on ``type``. Workers
publish through ``services.common.events.EventPublisher``, which checks each
event against this union; the CLI's watch parses with it; the browser reads the
type names and the JSON Schema written from it by ``write_js``.

The models name the fields their emitters always send, typed; every other field
is allowed (``extra="allow"``) because emitters add context freely (the sandbox
adds ``tool_call_id`` to its lifecycle events, a batch's status carries its
task counts). An unknown ``type`` or a declared field of the wrong type is an
error: that is what a renamed event or field looks like.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from services.common.contracts.statuses import JobStatus


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")

    def data(self) -> dict[str, Any]:
        """The event's data as published (every field but ``type``)."""
        return self.model_dump(mode="json", exclude={"type"})


class Status(_Event):
    """The job's status changed (also sent with a batch's task counts while it runs)."""

    type: Literal["status"]
    status: JobStatus
    error: str | None = None
    message: str | None = None
    progress: dict[str, Any] | None = None  # a batch's counts: done, total, succeeded, …


class Token(_Event):
    """Answer text streamed since the previous token event (coalesced deltas)."""

    type: Literal["token"]
    text: str


class Model(_Event):
    """Which model answered the latest call (a fallback may differ from the one asked)."""

    type: Literal["model"]
    model: str | None


class ModelRetry(_Event):
    """A call that streamed text failed and is retried: that text is thrown away."""

    type: Literal["model_retry"]
    attempt: int
    error: str
    wait_s: float


class ToolStart(_Event):
    type: Literal["tool_start"]
    tool_call_id: str | None = None
    name: str | None = None


class ToolEnd(_Event):
    type: Literal["tool_end"]
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None  # the step's status: succeeded, failed, …
    preview: str | None = None  # the result's first 500 characters


class Todo(_Event):
    """The agent's todo list, whole (each item: content, status)."""

    type: Literal["todo"]
    items: list[dict[str, Any]]


class Progress(_Event):
    """A survey's counters; each optional, a watcher keeps what it saw before."""

    type: Literal["progress"]
    stage: str | None = None
    papers_found: int | None = None
    papers_read: int | None = None
    sections_total: int | None = None
    sections_written: int | None = None
    cost_usd: float | None = None


class Approval(_Event):
    """An approval was requested (worker) or decided (API)."""

    type: Literal["approval"]
    approval_id: str
    status: str  # the approval's status: pending, approved, rejected, …


class Budget(_Event):
    type: Literal["budget"]
    state: Literal["soft_limit", "exhausted"]
    model: str | None = None
    message: str | None = None


class Compression(_Event):
    """One context layer ran for a model call (and whether it changed anything)."""

    type: Literal["compression"]
    round: int
    layer: str
    changed: int  # how many messages the layer changed (0: none)
    before_tokens: int
    after_tokens: int


class PromptSwitch(_Event):
    type: Literal["prompt_switch"]
    to: str | None


class McpUnavailable(_Event):
    type: Literal["mcp_unavailable"]
    server: str
    reason: str


class MemoryProposal(_Event):
    type: Literal["memory_proposal"]
    proposal_id: str
    kind: str


class AccessRevoked(_Event):
    """The job's user lost access: the worker cancels it, the API ends its streams."""

    type: Literal["access_revoked"]
    reason: str


class EventsLost(_Event):
    """Made by the API's stream, never published: events after ``last_event_id`` expired."""

    type: Literal["events_lost"]
    last_event_id: str
    message: str


class SandboxStart(_Event):
    type: Literal["sandbox_start"]
    sandbox_id: str
    backend: str


class SandboxEnd(_Event):
    type: Literal["sandbox_end"]
    sandbox_id: str
    exit_code: int | None


class SandboxKill(_Event):
    type: Literal["sandbox_kill"]
    sandbox_id: str
    reason: str


class SandboxTimeout(_Event):
    type: Literal["sandbox_timeout"]
    sandbox_id: str
    timeout_s: float


class SandboxCleanup(_Event):
    type: Literal["sandbox_cleanup"]
    sandbox_id: str


class Final(_Event):
    """The job's last event: its terminal status, result and error."""

    type: Literal["final"]
    status: JobStatus
    result: Any = None
    error: str | None = None


JobEvent = Annotated[
    Status
    | Token
    | Model
    | ModelRetry
    | ToolStart
    | ToolEnd
    | Todo
    | Progress
    | Approval
    | Budget
    | Compression
    | PromptSwitch
    | McpUnavailable
    | MemoryProposal
    | AccessRevoked
    | EventsLost
    | SandboxStart
    | SandboxEnd
    | SandboxKill
    | SandboxTimeout
    | SandboxCleanup
    | Final,
    Field(discriminator="type"),
]
JOB_EVENT: TypeAdapter[JobEvent] = TypeAdapter(JobEvent)

# The event a job's stream ends with: a reader that got it has everything.
JOB_TERMINAL: frozenset[str] = frozenset({"final"})

# Every type name, sorted (the browser subscribes to these).
EVENT_TYPES: tuple[str, ...] = tuple(sorted(JOB_EVENT.json_schema()["discriminator"]["mapping"]))


def parse_event(event_type: str, data: dict[str, Any]) -> JobEvent:
    """The typed event; ``pydantic.ValidationError`` for an unknown type or a bad field.

    ``data`` must not carry its own ``type`` (it would stand in for the real one)."""
    if "type" in data:
        raise ValueError(f"a {event_type!r} event's data has a 'type' field")
    return JOB_EVENT.validate_python({**data, "type": event_type})
