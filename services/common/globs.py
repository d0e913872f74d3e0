"""Glob patterns as regular expressions: one translation for every place that matches
workspace paths (the file tools' ``glob``, the approvals' protected paths)."""

from __future__ import annotations

import re


def glob_source(pattern: str) -> str:
    """The regex source of a glob: ``*`` and ``?`` within one path part, ``[abc]`` /
    ``[!abc]``, ``**/`` for any number of directories, ``**`` for anything."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
