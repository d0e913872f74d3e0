"""The simulator's in-memory state: scripts, per-slot attempt counters, prefix cache, stats.

Everything here is touched only from the server's event loop (all handlers are
async), so no locks are needed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import Any

from services.model_sim.script import Script, ScriptEntry, Slot, plan_slots

# Stands in for an auto-mode reply until the app generates it from the request.
AUTO_PLACEHOLDER = ScriptEntry(content="")
EXHAUSTED_REPLY = "The scripted conversation has ended."
# Bounds memory when a long-running simulator sees many conversations.
MAX_CONVERSATIONS = 10_000
# What tests may read back of the requests received (``GET /_sim/requests``):
# the newest requests of the newest conversations only, so memory stays bounded.
RECORDED_CONVERSATIONS = 32
RECORDED_REQUESTS = 64
# A conversation key may end in ``#slot=<n>``: the reply slot, for a client whose
# view has lost assistant messages to compression (the count would be wrong).
SLOT_SEPARATOR = "#slot="


def split_slot(key: str) -> tuple[str, int | None]:
    """The conversation key without a ``#slot=<n>`` suffix, and n if it was there."""
    base, sep, tail = key.rpartition(SLOT_SEPARATOR)
    if sep and base and tail.isdigit():
        return base, int(tail)
    return key, None


def estimate_tokens(chars: int) -> int:
    """The simulator's token estimate: about three characters per token."""
    return (chars + 2) // 3


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message as the model would read it."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    return "".join(parts)


@dataclass(frozen=True)
class Decision:
    """What to answer for one request."""

    kind: str  # "reply" | "error" | "disconnect" | "empty_stream"
    entry: ScriptEntry  # the reply to play (a disconnect cuts it off halfway)
    latency_s: float
    slot: int
    attempt: int
    fault: ScriptEntry | None = None  # the injected error / disconnect / delay entry
    auto: bool = False  # no script: the app generates the reply from the request (auto mode)


@dataclass
class Conversation:
    requests: int = 0
    attempts: dict[int, int] = field(default_factory=dict)
    seen_prefixes: set[str] = field(default_factory=set)
    # What the last request offered, so tests can check tools reached the model.
    last_tools: list[str] = field(default_factory=list)
    last_messages: int = 0


@dataclass
class Counters:
    requests: int = 0
    replies: int = 0
    auto_replies: int = 0
    errors_injected: int = 0
    disconnects_injected: int = 0
    empty_streams_injected: int = 0
    delays_injected: int = 0
    bad_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


class SimState:
    """Scripts and memory of what each conversation has asked so far."""

    def __init__(self, *, default_script: Script | None, default_latency_ms: int) -> None:
        self.default_script = default_script
        self.default_latency_ms = default_latency_ms
        self.scripts: dict[str, Script] = {}
        self.conversations: OrderedDict[str, Conversation] = OrderedDict()
        self.counters = Counters()
        self.recorded: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()

    def record_request(
        self,
        key: str,
        *,
        slot: int,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None = None,
    ) -> None:
        """Keep what this request asked (bounded), for tests comparing model views."""
        log = self.recorded.get(key)
        if log is None:
            log = self.recorded[key] = deque(maxlen=RECORDED_REQUESTS)
            while len(self.recorded) > RECORDED_CONVERSATIONS:
                self.recorded.popitem(last=False)
        else:
            self.recorded.move_to_end(key)
        log.append(
            {
                "slot": slot,
                "received_at": time.time(),
                "messages": messages,
                "response_format": response_format,
            }
        )

    def set_script(self, key: str, script: Script) -> None:
        """Install a script for one conversation; it starts afresh (counters cleared)."""
        self.scripts[key] = script
        self.conversations.pop(key, None)

    def delete_script(self, key: str) -> bool:
        self.conversations.pop(key, None)
        return self.scripts.pop(key, None) is not None

    def reset(self) -> None:
        """Forget per-conversation scripts, counters and the prefix cache."""
        self.scripts.clear()
        self.conversations.clear()
        self.recorded.clear()
        self.counters = Counters()

    def _conversation(self, key: str) -> Conversation:
        conv = self.conversations.get(key)
        if conv is None:
            conv = self.conversations[key] = Conversation()
            while len(self.conversations) > MAX_CONVERSATIONS:
                self.conversations.popitem(last=False)
        else:
            self.conversations.move_to_end(key)
        return conv

    def note_request(self, key: str, *, tools: list[str], messages: int) -> None:
        conv = self._conversation(key)
        conv.last_tools = tools
        conv.last_messages = messages

    def decide(self, key: str, slot: int) -> Decision:
        """Pick the entry for this request and count the attempt at its slot."""
        conv = self._conversation(key)
        conv.requests += 1
        self.counters.requests += 1
        attempt = conv.attempts.get(slot, 0)
        conv.attempts[slot] = attempt + 1
        script = self.scripts.get(key, self.default_script)
        if script is None:
            self.counters.auto_replies += 1
            decision = self._reply(AUTO_PLACEHOLDER, None, slot, attempt)
            return replace(decision, auto=True)
        slots = plan_slots(script)
        entry = slots[slot].entry_for_attempt(attempt) if slot < len(slots) else None
        if entry is None:
            return self._reply(_after_script(script), script, slot, attempt)
        if entry.is_reply:
            return self._reply(entry, script, slot, attempt)
        reply = _slot_reply(slots[slot], script)
        latency = self._latency(entry, script)
        if entry.error is not None:
            self.counters.errors_injected += 1
            return Decision("error", reply, latency, slot, attempt, fault=entry)
        if entry.disconnect:
            self.counters.disconnects_injected += 1
            return Decision("disconnect", reply, latency, slot, attempt, fault=entry)
        if entry.empty_stream:
            self.counters.empty_streams_injected += 1
            return Decision("empty_stream", reply, latency, slot, attempt, fault=entry)
        # A bare delay or pacing entry: this attempt is slow (so clients can time out),
        # then answers.
        self.counters.delays_injected += 1
        return Decision("reply", reply, latency, slot, attempt, fault=entry)

    def _reply(
        self, entry: ScriptEntry, script: Script | None, slot: int, attempt: int
    ) -> Decision:
        self.counters.replies += 1
        return Decision("reply", entry, self._latency(entry, script), slot, attempt)

    def _latency(self, entry: ScriptEntry, script: Script | None) -> float:
        if entry.delay_ms is not None:
            return entry.delay_ms / 1000
        if script is not None and script.latency_ms is not None:
            return script.latency_ms / 1000
        return self.default_latency_ms / 1000

    def cached_tokens(self, key: str, messages: list[dict[str, Any]], *, remember: bool) -> int:
        """Tokens of the longest message prefix this conversation sent before; with
        ``remember``, every prefix of this request counts as cached for later requests
        (a plausible prefix-cache figure: rejected requests never reach the cache)."""
        conv = self._conversation(key)
        digest = hashlib.sha256()
        chars = 0
        cached_chars = 0
        for message in messages:
            digest.update(json.dumps(message, sort_keys=True, default=str).encode())
            chars += len(message_text(message))
            prefix = digest.copy().hexdigest()
            if prefix in conv.seen_prefixes:
                cached_chars = chars
            elif remember:
                conv.seen_prefixes.add(prefix)
        return estimate_tokens(cached_chars) if cached_chars else 0

    def stats(self) -> dict[str, Any]:
        return {
            **self.counters.__dict__,
            "scripts": sorted(self.scripts),
            "default_script": self.default_script is not None,
            "conversations": {
                key: {
                    "requests": conv.requests,
                    "attempts": {str(slot): n for slot, n in sorted(conv.attempts.items())},
                    "last_tools": conv.last_tools,
                    "last_messages": conv.last_messages,
                }
                for key, conv in self.conversations.items()
            },
        }


def _slot_reply(slot: Slot, script: Script) -> ScriptEntry:
    return slot.reply if slot.reply is not None else _after_script(script)


def _after_script(script: Script) -> ScriptEntry:
    """Past the end: repeat the last reply if it is plain text, else a fixed text."""
    replies = [e for e in script.replies if e.is_reply]
    if replies and replies[-1].content is not None and not replies[-1].tool_calls:
        return replies[-1]
    return ScriptEntry(content=EXHAUSTED_REPLY)
