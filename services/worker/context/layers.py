"""The non-LLM compression layers over a chat-format message list.

Each layer is a pure function of the messages it is given: it copies what it
changes and never reads the clock, the database or anything random, so the
same history always compresses to the same view. Tool outputs of the last two
tool rounds are never touched (the model is usually working on them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Tools whose outputs are long and re-obtainable: cut them first.
PRIMARY_TOOLS = frozenset(
    {
        "read_file",
        "grep",
        "glob",
        "web_fetch",
        "pdf_fetch",
        "web_search",
        "python",
        "bash",
        "library_search",
        "paper_search",
        "session_history",
    }
)
DEDUPE_MIN_CHARS = 200
PROTECTED_TOOL_ROUNDS = 2


@dataclass(frozen=True)
class LayerResult:
    """One layer that changed the view: how many messages and the tokens before/after."""

    layer: str
    changed: int
    before_tokens: int
    after_tokens: int


def tool_call_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    """tool_call_id → tool name, from the assistant messages that asked for them."""
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    return names


def protected_start(messages: list[dict[str, Any]]) -> int:
    """Index where the last two tool rounds begin (len(messages) if there are none)."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")]
    if not starts:
        return len(messages)
    return starts[-PROTECTED_TOOL_ROUNDS:][0]


def _tool_indices(messages: list[dict[str, Any]], limit: int) -> list[int]:
    return [i for i in range(limit) if messages[i]["role"] == "tool"]


def drop_duplicates(messages: list[dict[str, Any]], *, limit: int) -> int:
    """Replace older exact duplicates of a tool output (≥ 200 chars) by a pointer to the newest."""
    seen: set[str] = set()
    changed = 0
    # The newest copy may sit in the protected rounds; it still counts as "kept".
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        content = m.get("content") or ""
        if m["role"] != "tool" or len(content) < DEDUPE_MIN_CHARS:
            continue
        if content in seen and i < limit:
            messages[i] = {
                **m,
                "content": f"[duplicate output of {len(content)} chars omitted: "
                "the same result appears again later in this conversation]",
            }
            changed += 1
        seen.add(content)
    return changed


def head_and_tail(text: str, max_chars: int) -> str:
    omitted = len(text) - max_chars
    head = max_chars * 2 // 3
    tail = max_chars - head
    return f"{text[:head]}\n…[{omitted} chars omitted]…\n{text[len(text) - tail :]}"


def truncate_outputs(
    messages: list[dict[str, Any]],
    *,
    limit: int,
    max_chars: int,
    only: frozenset[str] | None,
    truncated: set[int],
) -> int:
    """Keep head and tail of tool outputs longer than ``max_chars`` (of ``only`` tools if set)."""
    names = tool_call_names(messages)
    changed = 0
    for i in _tool_indices(messages, limit):
        m = messages[i]
        content = m.get("content") or ""
        if len(content) <= max_chars:
            continue
        if only is not None and names.get(m.get("tool_call_id", "")) not in only:
            continue
        messages[i] = {**m, "content": head_and_tail(content, max_chars)}
        truncated.add(i)
        changed += 1
    return changed


def placeholders(
    messages: list[dict[str, Any]], *, truncated: set[int], original_chars: dict[int, int]
) -> int:
    """Replace outputs already truncated by a one-line placeholder."""
    names = tool_call_names(messages)
    for i in sorted(truncated):
        m = messages[i]
        tool = names.get(m.get("tool_call_id", ""), "tool")
        messages[i] = {
            **m,
            "content": f"[output of {tool} ({original_chars.get(i, 0)} chars) omitted to save "
            "context; call the tool again or use session_history if it is needed]",
        }
    return len(truncated)
