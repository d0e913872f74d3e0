"""The model-visible view: a pure function of (system prompt, history, recorded summaries).

The persisted history is never changed; this module only decides what the
model is shown. Given the same history and the same ``summary:<round>`` steps
from the ledger, every worker builds exactly the same list of messages, so a
job resumed after a crash asks the model the same question the first worker
would have asked. A new summary is never made here: the builder only says
that one is wanted (``SummaryRequest``); the caller asks the model once,
records the answer as a ledger step and builds again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from services.worker.context import layers
from services.worker.llm.token_estimate import message_tokens, view_tokens

SUMMARY_HEADER = "[Summary of the earlier conversation, written to save context]"
COMPACT_COMMAND = "/compact"


@dataclass(frozen=True)
class Budget:
    """Thresholds in tokens of the messages' budget: the window less the output reserve
    and what the server evaluates beside the messages (``context/window.py``)."""

    input_tokens: int
    truncate_primary_chars: int = 4_000
    truncate_all_chars: int = 2_000
    keep_user_tokens: int = 2_000

    def share(self, fraction: float) -> float:
        return self.input_tokens * fraction


@dataclass(frozen=True)
class RecordedSummary:
    """A ``summary:<round>`` step: the text and how many history messages it replaces."""

    round: int
    content: str
    covers: int


@dataclass(frozen=True)
class SummaryRequest:
    """A summary the view needs: of ``messages`` (after ``previous``), covering ``covers``."""

    covers: int
    previous: str | None
    messages: list[dict[str, Any]]


@dataclass
class ContextView:
    messages: list[dict[str, Any]]
    tokens_before: int
    tokens_after: int
    layers: list[layers.LayerResult] = field(default_factory=list)
    summary_round: int | None = None
    wants_summary: SummaryRequest | None = None
    # Whether the messages fit the budget after every layer (the caller refuses if not).
    fits: bool = True

    @property
    def summarised(self) -> bool:
        return self.summary_round is not None

    def digest(self) -> str:
        """A fingerprint of exactly what the model is sent (for the ledger and tests)."""
        raw = json.dumps(self.messages, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(raw.encode()).hexdigest()


def compact_requested(base: list[dict[str, Any]]) -> bool:
    """Whether the newest user message is the ``/compact`` command."""
    for m in reversed(base):
        if m["role"] == "user":
            return str(m.get("content") or "").strip().startswith(COMPACT_COMMAND)
    return False


def build_view(
    *,
    system: dict[str, Any],
    base: list[dict[str, Any]],
    summaries: list[RecordedSummary],
    round_no: int,
    budget: Budget,
    force_summary: bool = False,
) -> ContextView:
    """Compress ``base`` (the whole history, chat format, no system message) for one call.

    ``summaries`` are the recorded summary steps of this job; those of later
    rounds are ignored, so rebuilding round r on resume sees what round r saw.
    """
    before = message_tokens(system) + view_tokens(base)
    usable = [s for s in summaries if s.round <= round_no and s.covers <= len(base)]
    latest = max(usable, key=lambda s: s.round) if usable else None
    head: list[dict[str, Any]] = []
    covered = 0
    if latest is not None:
        covered = latest.covers
        head = [_summary_message(latest.content), *_kept_users(base[:covered], budget)]
    rest = list(base[covered:])  # layers replace the dicts they change, never edit them
    view = ContextView(messages=[], tokens_before=before, tokens_after=before)
    fixed = message_tokens(system) + view_tokens(head)
    costs = [message_tokens(m) for m in rest]
    if latest is not None:
        after = fixed + sum(costs)
        view.layers.append(layers.LayerResult("summary", covered, before, after))
        view.summary_round = latest.round
    tokens = fixed + _apply_layers(view, fixed, rest, costs, budget)
    already = any(s.round == round_no for s in usable)
    if not already and (force_summary or tokens >= budget.share(0.9)):
        split = _summary_split(rest)
        if split > 0:
            view.wants_summary = SummaryRequest(
                covers=covered + split,
                previous=latest.content if latest else None,
                messages=rest[:split],
            )
    if view.wants_summary is None and tokens > budget.input_tokens:
        # Last resort, once no summary is pending: cut every long message (the
        # protected rounds too) so the view fits the window rather than overflows it.
        tokens = fixed + _shrink(view, fixed, rest, costs, budget)
    view.messages = [system, *head, *rest]
    view.tokens_after = tokens
    view.fits = tokens <= budget.input_tokens
    return view


# Ever shorter cuts of the last-resort layer (characters kept per message).
SHRINK_STEPS = (1_000, 400, 120)


def _shrink(
    view: ContextView,
    fixed: int,
    rest: list[dict[str, Any]],
    costs: list[int],
    budget: Budget,
) -> int:
    """Cut long messages (all but the newest user message) to head and tail, ever
    shorter, until the view fits; the tokens of ``rest`` after."""
    users = [i for i, m in enumerate(rest) if m["role"] == "user"]
    keep = users[-1] if users else -1
    total = sum(costs)
    before = fixed + total
    changed: set[int] = set()
    for max_chars in SHRINK_STEPS:
        if fixed + total <= budget.input_tokens:
            break
        for i, m in enumerate(rest):
            content = m.get("content")
            if i == keep or not isinstance(content, str) or len(content) <= max_chars:
                continue
            rest[i] = {**m, "content": layers.head_and_tail(content, max_chars)}
            cost = message_tokens(rest[i])
            total += cost - costs[i]
            costs[i] = cost
            changed.add(i)
    if changed:
        view.layers.append(layers.LayerResult("shrink", len(changed), before, fixed + total))
    return total


def _apply_layers(
    view: ContextView,
    fixed: int,
    rest: list[dict[str, Any]],
    costs: list[int],
    budget: Budget,
) -> int:
    """Run the layers whose threshold the view still reaches; the tokens of ``rest`` after."""
    limit = layers.protected_start(rest)
    truncated: set[int] = set()
    original = {i: len(m.get("content") or "") for i, m in enumerate(rest) if m["role"] == "tool"}
    steps = (
        (0.5, "dedupe", lambda: layers.drop_duplicates(rest, limit=limit)),
        (
            0.6,
            "truncate_primary",
            lambda: layers.truncate_outputs(
                rest,
                limit=limit,
                max_chars=budget.truncate_primary_chars,
                only=layers.PRIMARY_TOOLS,
                truncated=truncated,
            ),
        ),
        (
            0.7,
            "truncate_all",
            lambda: layers.truncate_outputs(
                rest,
                limit=limit,
                max_chars=budget.truncate_all_chars,
                only=None,
                truncated=truncated,
            ),
        ),
        (
            0.8,
            "placeholders",
            lambda: layers.placeholders(rest, truncated=truncated, original_chars=original),
        ),
    )
    total = sum(costs)
    for share, name, apply in steps:
        before = fixed + total
        if before < budget.share(share):
            break
        previous = list(rest)
        changed = apply()
        if not changed:
            continue
        # Re-measure only the messages this layer replaced.
        for i, m in enumerate(rest):
            if m is not previous[i]:
                cost = message_tokens(m)
                total += cost - costs[i]
                costs[i] = cost
        view.layers.append(layers.LayerResult(name, changed, before, fixed + total))
    return total


def _summary_message(content: str) -> dict[str, Any]:
    return {"role": "user", "content": f"{SUMMARY_HEADER}\n{content}"}


def _kept_users(covered: list[dict[str, Any]], budget: Budget) -> list[dict[str, Any]]:
    """The newest user messages of the summarised part that fit the verbatim budget."""
    kept: list[dict[str, Any]] = []
    left = budget.keep_user_tokens
    for m in reversed(covered):
        if m["role"] != "user":
            continue
        cost = message_tokens(m)
        if cost > left:
            break
        kept.append(dict(m))
        left -= cost
    kept.reverse()
    return kept


def _summary_split(rest: list[dict[str, Any]]) -> int:
    """How many leading messages a summary may replace: all before the protected rounds,
    or before the newest user message when there are no tool rounds."""
    limit = layers.protected_start(rest)
    if limit == len(rest):
        users = [i for i, m in enumerate(rest) if m["role"] == "user"]
        limit = users[-1] if users else 0
    return limit


def render_transcript(messages: list[dict[str, Any]], *, previous: str | None) -> str:
    """The text a summariser reads: the earlier summary, then each message on its own lines."""
    names = layers.tool_call_names(messages)
    lines: list[str] = []
    if previous:
        lines.append(f"Earlier summary:\n{previous}\n")
    for m in messages:
        if m["role"] == "tool":
            tool = names.get(m.get("tool_call_id", ""), "tool")
            lines.append(f"tool result ({tool}): {m.get('content') or ''}")
            continue
        if m.get("content"):
            lines.append(f"{m['role']}: {m['content']}")
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            lines.append(f"assistant called {fn['name']}({fn['arguments']})")
    return "\n".join(lines)


def local_summary(request: SummaryRequest, *, max_chars: int = 3_000) -> str:
    """A summary made without the model (its call failed): the earlier summary and one
    short line per message, newest kept when it does not all fit."""
    names = layers.tool_call_names(request.messages)
    lines: list[str] = []
    for m in request.messages:
        content = str(m.get("content") or "").replace("\n", " ")
        if m["role"] == "tool":
            tool = names.get(m.get("tool_call_id", ""), "tool")
            lines.append(f"- {tool} returned {len(content)} chars: {content[:80]}")
        elif m["role"] == "assistant" and m.get("tool_calls"):
            called = ", ".join(c["function"]["name"] for c in m["tool_calls"])
            lines.append(f"- assistant called {called}")
        elif content:
            lines.append(f"- {m['role']}: {content[:160]}")
    body = "\n".join(lines)
    if len(body) > max_chars:
        body = "…\n" + body[len(body) - max_chars :]
    head = f"{request.previous}\n" if request.previous else ""
    return f"{head}(local summary; the summariser was unavailable)\n{body}"
