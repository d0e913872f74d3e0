"""The system prompt assembled from pieces, with project overrides and prompt switching.

Pieces, in order: persona, rules, tool discipline, skills index, memory,
environment (date, project, workspace). Each file piece is looked up in the
project's folder (``<home>/projects/<project_id>/prompts/<piece>.md``), then
the deployment's ``prompts_dir``, then the defaults shipped here. The text
depends only on the job (its creation date, not the clock) and these files,
so a resumed job assembles the same prompt.

Prompt switching: from user turn k+1 on (``prompt_switch_after_turn`` = k)
the whole prompt becomes the named prompt file ``<name>.md`` or, when no such
file exists, the given text.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path

from services.common.skills import skill_folders as common_skill_folders
from services.worker.context.settings import ContextSettings

DEFAULTS = Path(__file__).parent / "default"
FILE_PIECES = ("rules", "tool_discipline")


@dataclass(frozen=True)
class PromptContext:
    """What the prompt is about: the job's project, date and the session's own prompt."""

    project_id: uuid.UUID | None
    project_name: str | None
    date: dt.date
    session_prompt: str | None
    default_persona: str
    user_turns: int
    skills_index: str = ""
    memory: str = ""


@dataclass(frozen=True)
class SystemPrompt:
    text: str
    # The switched-to prompt's name (or "text"), None while the assembled prompt is in use.
    switched_to: str | None = None
    # True on the first user turn that uses the switched prompt.
    switch_starts: bool = False


def prompt_folders(settings: ContextSettings, project_id: uuid.UUID | None) -> list[Path]:
    """Where pieces are looked up, most specific first."""
    folders: list[Path] = []
    if project_id is not None:
        folders.append(settings.home / "projects" / str(project_id) / "prompts")
    if settings.prompts_dir:
        folders.append(Path(settings.prompts_dir))
    folders.append(DEFAULTS)
    return folders


def _piece(folders: list[Path], name: str) -> str | None:
    for folder in folders:
        path = folder / f"{name}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    return None


def assemble(settings: ContextSettings, ctx: PromptContext) -> SystemPrompt:
    folders = prompt_folders(settings, ctx.project_id)
    k = settings.prompt_switch_after_turn
    if k is not None and settings.prompt_switch_to and ctx.user_turns > k:
        target = settings.prompt_switch_to
        named = _piece(folders, target) if _is_name(target) else None
        return SystemPrompt(
            text=named if named is not None else target,
            switched_to=target if named is not None else "text",
            switch_starts=ctx.user_turns == k + 1,
        )
    persona = ctx.session_prompt or _piece(folders, "persona") or ctx.default_persona
    parts = [persona, *(p for n in FILE_PIECES if (p := _piece(folders, n)))]
    if ctx.skills_index:
        parts.append(ctx.skills_index)
    if ctx.memory:
        parts.append(ctx.memory)
    project = ctx.project_name or "none (personal session)"
    parts.append(
        f"Environment:\n- Date: {ctx.date.isoformat()}\n- Project: {project}\n"
        "- Workspace: the session workspace; file paths are relative to it."
    )
    return SystemPrompt(text="\n\n".join(parts))


def _is_name(target: str) -> bool:
    return len(target) <= 100 and all(c.isalnum() or c in "-_" for c in target)


def skill_folders(settings: ContextSettings, project_id: uuid.UUID | None) -> list[Path]:
    """Deployment skills first, then the project's (which replace same-named ones)."""
    return common_skill_folders(settings.home, settings.skills_dir, project_id)
