"""Skills on disk: ``skills/<name>/SKILL.md`` folders, per deployment and per project.

Read by the worker (the skills index in the prompt, ``/name`` injection) and by the
API (the chat page's list of slash commands), so both see exactly the same skills.
A project's skill of the same name replaces the deployment's.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
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


def skill_folders(home: Path, skills_dir: str | None, project_id: uuid.UUID | None) -> list[Path]:
    """Deployment skills first, then the project's (which replace same-named ones)."""
    folders = [Path(skills_dir) if skills_dir else home / "skills"]
    if project_id is not None:
        folders.append(home / "projects" / str(project_id) / "skills")
    return folders
