"""Skills: ``skills/<name>/SKILL.md`` folders, per deployment and per project.

Only the index (name and description from the front matter) goes into the
system prompt; a user message that says ``/name`` gets the whole SKILL.md
added to the model's view of that message (the stored message stays as typed).
A project's skill of the same name replaces the deployment's.
"""

from __future__ import annotations

import re
from typing import Any

from services.common.skills import Skill, load_skills, parse_skill

__all__ = ["Skill", "inject_skills", "load_skills", "parse_skill", "skills_index"]

MENTION_RE = re.compile(r"(?<!\S)/([a-z0-9][a-z0-9_-]{0,63})\b")


def skills_index(skills: dict[str, Skill]) -> str:
    if not skills:
        return ""
    lines = [f"- /{s.name}: {s.description}" for s in sorted(skills.values(), key=lambda s: s.name)]
    return "Skills (the user loads one by writing /name):\n" + "\n".join(lines)


def inject_skills(messages: list[dict[str, Any]], skills: dict[str, Skill]) -> list[dict[str, Any]]:
    """The chat-format messages with each mentioned skill appended to the newest user message."""
    if not skills:
        return messages
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] != "user":
            continue
        text = str(m.get("content") or "")
        names = [n for n in dict.fromkeys(MENTION_RE.findall(text)) if n in skills]
        if not names:
            return messages
        added = "".join(f"\n\n[Skill /{n}]\n{skills[n].body}" for n in names)
        out = list(messages)
        out[i] = {**m, "content": text + added}
        return out
    return messages
