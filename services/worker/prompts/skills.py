"""Skills: ``skills/<name>/SKILL.md`` folders, per deployment and per project.

Only the index (name and description from the front matter) goes into the
system prompt; a user message that says ``/name`` gets the whole SKILL.md
added to the model's view of that message (the stored message stays as typed).
A project's skill of the same name replaces the deployment's.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MENTION_RE = re.compile(r"(?<!\S)/([a-z0-9][a-z0-9_-]{0,63})\b")
MAX_SKILL_CHARS = 40_000


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str


def parse_skill(text: str, *, folder: str) -> Skill | None:
    """A skill from its SKILL.md text, or None when the front matter is missing or bad."""
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    fields: dict[str, str] = {}
    for line in text[3:end].strip().splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip().strip("\"'")
    name = fields.get("name") or folder
    if not NAME_RE.match(name) or not fields.get("description"):
        return None
    return Skill(name=name, description=fields["description"], body=text[:MAX_SKILL_CHARS])


def load_skills(folders: list[Path]) -> dict[str, Skill]:
    """Skills from each folder in order; a later folder's skill replaces an earlier one."""
    found: dict[str, Skill] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(f"*/{SKILL_FILE}")):
            try:
                skill = parse_skill(path.read_text(encoding="utf-8"), folder=path.parent.name)
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("skill %s unreadable: %s", path, exc)
                continue
            if skill is None:
                log.warning("skill %s has no valid name/description front matter", path)
                continue
            found[skill.name] = skill
    return found


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
