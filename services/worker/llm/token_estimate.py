"""Token accounting for the model's view: a local estimate, the same on every worker.

The estimate (about three characters per token, as the simulator counts) is a
pure function of the text, so a resumed job measures a view exactly as the
first worker did and takes the same compression decisions.
"""

from __future__ import annotations

from typing import Any


def estimate_tokens(text: str) -> int:
    return (len(text) + 2) // 3


def message_tokens(message: dict[str, Any]) -> int:
    """Tokens of one chat message, tool-call names and arguments included."""
    chars = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        chars += len(function.get("name", "")) + len(str(function.get("arguments", "")))
    # A few tokens of chat-format framing per message.
    return (chars + 2) // 3 + 4


def view_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)
