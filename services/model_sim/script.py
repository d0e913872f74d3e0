"""The simulator's script format: scripted replies, fault entries, validation.

A script is a list of entries. Reply entries (``content`` and/or
``tool_calls``) are what the model "says"; fault entries (``error``,
``disconnect``, ``empty_stream``, or a bare ``delay_ms`` / pacing entry) placed
before a reply are consumed one per attempt at that reply's slot, so a client
that retries sees the fault first and the reply afterwards.

Pacing (``token_delay_ms``, ``stall_after_tokens`` + ``stall_ms``) on a reply
applies to every attempt that plays it; on a bare entry, to that attempt only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# Status codes a fault entry may inject; the client's retry logic is keyed on them.
INJECTABLE_STATUSES = frozenset({400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504})


class ScriptError(ValueError):
    """A script that cannot be played; the message says what is wrong and where."""


class ScriptToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    # An object is serialized to JSON; a string is sent verbatim so tests can
    # hand the client malformed JSON arguments.
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ScriptEntry(BaseModel):
    """One element of ``replies``: a reply or a fault, with an optional latency override."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ScriptToolCall] | None = None
    error: int | None = None
    message: str | None = None
    retry_after: float | None = Field(default=None, ge=0)
    disconnect: bool = False
    # HTTP 200, text/event-stream, no event at all: what llama-cpp-python answers for
    # every error inside a stream (a non-streamed request gets an empty 200 body).
    empty_stream: bool = False
    delay_ms: int | None = Field(default=None, ge=0, le=600_000)
    # A slow but steady stream: each token (content or argument piece) waits this long
    # and is flushed as it is produced. None sends the whole stream at once (as before).
    token_delay_ms: int | None = Field(default=None, ge=0, le=60_000)
    # A stall: after this many tokens the stream goes silent for stall_ms, then goes on.
    stall_after_tokens: int | None = Field(default=None, ge=0)
    stall_ms: int | None = Field(default=None, ge=0, le=600_000)
    # Cut the reply at the request's max_tokens (≈ 3 characters per token) with
    # finish_reason "length"; by default max_tokens does not truncate.
    honour_max_tokens: bool = False

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptEntry:
        is_reply = self.content is not None or bool(self.tool_calls)
        kinds = [is_reply, self.error is not None, self.disconnect, self.empty_stream]
        if sum(kinds) > 1:
            raise ValueError(
                "an entry is either a reply, an error, a disconnect or an empty stream, not several"
            )
        if sum(kinds) == 0 and self.delay_ms is None and not self.paced:
            raise ValueError(
                "an entry needs content, tool_calls, error, disconnect, empty_stream, "
                "delay_ms, token_delay_ms or stall_after_tokens"
            )
        if (self.stall_after_tokens is None) != (self.stall_ms is None):
            raise ValueError("stall_after_tokens and stall_ms go together")
        if self.error is not None and self.error not in INJECTABLE_STATUSES:
            raise ValueError(f"error must be one of {sorted(INJECTABLE_STATUSES)}")
        if self.tool_calls is not None and not self.tool_calls:
            raise ValueError("tool_calls must not be empty (leave it out instead)")
        return self

    @property
    def paced(self) -> bool:
        """Whether this entry streams token by token (a delay per token or a stall)."""
        return self.token_delay_ms is not None or self.stall_after_tokens is not None

    @property
    def is_reply(self) -> bool:
        return self.content is not None or bool(self.tool_calls)

    def reply_text(self) -> str:
        """All text the model produces in this reply (for token estimates)."""
        parts = [self.content or ""]
        for call in self.tool_calls or []:
            parts.append(call.name)
            parts.append(call.arguments_json())
        return "".join(parts)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    latency_ms: int | None = Field(default=None, ge=0, le=600_000)
    replies: list[ScriptEntry] = Field(default_factory=list)


@dataclass(frozen=True)
class Slot:
    """The entries that answer one reply slot: faults in order, then the reply (if any)."""

    faults: tuple[ScriptEntry, ...]
    reply: ScriptEntry | None

    def entry_for_attempt(self, attempt: int) -> ScriptEntry | None:
        """Attempt 0 gets the first fault, and so on; once faults are used up, the reply."""
        if attempt < len(self.faults):
            return self.faults[attempt]
        return self.reply


def plan_slots(script: Script) -> list[Slot]:
    """Group entries into slots: every reply closes a slot; trailing faults form the last."""
    slots: list[Slot] = []
    pending: list[ScriptEntry] = []
    for entry in script.replies:
        if entry.is_reply:
            slots.append(Slot(faults=tuple(pending), reply=entry))
            pending = []
        else:
            pending.append(entry)
    if pending:
        slots.append(Slot(faults=tuple(pending), reply=None))
    return slots


def parse_script(data: object, *, source: str = "script") -> Script:
    """Validate a decoded JSON script; raise :class:`ScriptError` with a readable reason."""
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ScriptError(f"invalid {source}: {problems}") from exc


def load_script(path: Path) -> Script:
    """Read and validate a script file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ScriptError(f"script {path} is not valid JSON: {exc}") from exc
    return parse_script(data, source=f"script {path}")
