"""The job result of a final answer: an empty or cut reply says so, never passes silently."""

from __future__ import annotations

from typing import Any

TRUNCATED_REASONS = frozenset({"length", "deadline"})
EMPTY_REPLY_NOTICE = "the model returned an empty reply"
TRUNCATED_NOTICE = "the reply was cut short (max_tokens or the stream deadline)"


def answer_result(content: str | None, truncated: bool, empty: bool) -> dict[str, Any]:
    """The job result of a final answer: an empty or cut reply says so (``notice``)."""
    result: dict[str, Any] = {"content": content or ""}
    if empty:
        result.update(empty=True, notice=EMPTY_REPLY_NOTICE)
    elif truncated:
        result.update(truncated=True, notice=TRUNCATED_NOTICE)
    return result
