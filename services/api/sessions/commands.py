"""The slash commands a session's chat offers: ``/compact`` and the skills.

The chat page lists them when the user types ``/``. Skills come from the same
folders the worker reads (deployment, then the session's project), so the list
shows exactly the ``/name`` skills a turn of this session would load.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

from services.api.access import visible_session
from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import error_responses
from services.common.skills import load_skills, skill_folders

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=error_responses(401, 422))

# Built into the worker (services/worker/context/view.py), not a skill file.
COMPACT = ("/compact", "Summarise the conversation so far to free the context window")


class SlashCommand(BaseModel):
    command: str
    description: str
    kind: Literal["builtin", "skill"]


class SlashCommandList(BaseModel):
    items: list[SlashCommand]


@router.get(
    "/{session_id}/commands", response_model=SlashCommandList, responses=error_responses(404)
)
def list_commands(
    session_id: str, db: DbSession, user: CurrentUser, state: StateDep
) -> SlashCommandList:
    """``/compact``, then the skills a turn of this session can load, by name."""
    session = visible_session(db, user, session_id)
    cfg = state.settings
    skills = load_skills(skill_folders(cfg.home, cfg.skills_dir, session.project_id))
    items = [SlashCommand(command=COMPACT[0], description=COMPACT[1], kind="builtin")]
    items += [
        SlashCommand(command=f"/{s.name}", description=s.description, kind="skill")
        for s in sorted(skills.values(), key=lambda s: s.name)
    ]
    return SlashCommandList(items=items)
