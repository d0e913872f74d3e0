"""First-line refusal of obviously destructive shell commands.

This is a courtesy check that gives the model a clear, early answer; the
container (read-only root, no capabilities, limits) is the real wall, so the
patterns aim at unmistakable intent, not at completeness.
"""

from __future__ import annotations

import re

_DANGEROUS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"\brm\s+(-[a-zA-Z]*\s+)*(-[a-zA-Z]*[rR][a-zA-Z]*\s+)(-[a-zA-Z]*\s+)*"
            r"(/|/\*|~|\$HOME|/(bin|boot|etc|lib|usr|var|sys|proc|dev))/?(\s|;|&|$)"
        ),
        "recursive delete of the root or a system directory",
    ),
    (re.compile(r"--no-preserve-root"), "rm --no-preserve-root"),
    (re.compile(r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:[^}]*\}\s*;?\s*:"), "fork bomb"),
    (re.compile(r"\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1\s*\|\s*\1\s*&[^}]*\}"), "fork bomb"),
    (re.compile(r"\bmkfs(\.\w+)?\b"), "formatting a filesystem (mkfs)"),
    (re.compile(r"\bdd\b[^|;&]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)"), "dd onto a device"),
    (
        re.compile(r">\s*/dev/(sd[a-z]|nvme\d|vd[a-z]|hd[a-z]|xvd[a-z]|mmcblk\d)"),
        "writing to a block device",
    ),
    (re.compile(r"\b(shutdown|reboot|halt|poweroff)\b"), "power-state command"),
    (
        re.compile(r"\bchmod\s+(-[a-zA-Z]*\s+)*-[a-zA-Z]*R[a-zA-Z]*\s+[0-7]*\s*/(\s|$)"),
        "recursive chmod of /",
    ),
]


def refusal_reason(command: str) -> str | None:
    """Why ``command`` is refused, or None when it may run."""
    for pattern, reason in _DANGEROUS:
        if pattern.search(command):
            return reason
    return None
