"""The prompt and skills of one job, read from its rows (called once per slice)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.models import Job, Message
from services.common.one_statement import OneStatement, rows_of
from services.worker.memory.documents import read_documents, render_memory
from services.worker.prompts.assembly import (
    PromptContext,
    SystemPrompt,
    assemble,
    skill_folders,
)
from services.worker.prompts.skills import Skill, load_skills, skills_index
from services.worker.settings import WorkerSettings
from services.worker.spine.ledger import StepView, llm_key


@dataclass(frozen=True)
class JobPrompt:
    system: SystemPrompt
    skills: dict[str, Skill]
    # The memory section as the job first saw it (recorded with its first model call).
    memory: str


# The session's own prompt and the project's name, in one round trip.
NAMES_SQL = text(
    """
    SELECT (SELECT system_prompt FROM sessions WHERE id = CAST(:session_id AS uuid))
               AS session_prompt,
           (SELECT name FROM projects WHERE id = CAST(:project_id AS uuid)) AS project_name
    """
)
_NAMES = OneStatement(NAMES_SQL)


def job_prompt(
    db: Session | Engine,
    settings: WorkerSettings,
    job: Job,
    history: list[Message],
    steps: dict[str, StepView],
) -> JobPrompt:
    """The job's prompt; the same on every resume, memory included: the agent may
    rewrite memory during the job, so after the first model call the memory text
    comes from that call's ledger step, not from the (changed) documents."""
    (names,) = rows_of(db, _NAMES, {"session_id": job.session_id, "project_id": job.project_id})
    skills = load_skills(skill_folders(settings, job.project_id))
    first = steps.get(llm_key(0))
    if first is not None and isinstance(first.arguments, dict) and "memory" in first.arguments:
        memory = str(first.arguments["memory"])
    else:
        memory = render_memory(read_documents(db, user_id=job.user_id, project_id=job.project_id))
    ctx = PromptContext(
        project_id=job.project_id,
        project_name=names.project_name,
        date=job.created_at.date(),
        session_prompt=names.session_prompt,
        default_persona=settings.system_prompt,
        user_turns=sum(1 for m in history if m.role == "user"),
        skills_index=skills_index(skills),
        memory=memory,
    )
    return JobPrompt(system=assemble(settings, ctx), skills=skills, memory=memory)
