"""API values printed as data, never as terminal control sequences.

Job inputs, paper titles and file names are other people's text. An ESC byte in
one would recolour, move the cursor or retitle the user's terminal; a carriage
return would overwrite the line before it; a bidi override would reorder what
the reader sees. So every such character is shown as a visible escape (``\\x1b``,
``\\n``, ``\\u202e``). Rich markup is the other half: user text is only ever
handed to rich as ``Text`` (never parsed as markup), see tables.py and watch_view.py.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode bidi embeddings/overrides/isolates.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Multi-line text (a streamed answer) keeps its line breaks and tabs.
_UNSAFE_MULTILINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def literal(value: object, *, multiline: bool = False) -> str:
    """``value`` as text that prints exactly as written: one line unless ``multiline``."""
    text = "" if value is None else str(value)
    return (_UNSAFE_MULTILINE if multiline else _UNSAFE).sub(_escape, text)


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
