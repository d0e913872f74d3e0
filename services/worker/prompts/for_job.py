"""The prompt and skills of one job, read from its rows (called once per slice)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from services.common.models import ChatSession, Job, Message, Project
from services.worker.prompts.assembly import (
    PromptContext,
    SystemPrompt,
    assemble,
    skill_folders,
)
from services.worker.prompts.skills import Skill, load_skills, skills_index
from services.worker.settings import WorkerSettings


@dataclass(frozen=True)
class JobPrompt:
    system: SystemPrompt
    skills: dict[str, Skill]


def job_prompt(
    db: Session, settings: WorkerSettings, job: Job, history: list[Message], *, memory: str = ""
) -> JobPrompt:
    session = db.get(ChatSession, job.session_id) if job.session_id else None
    project = db.get(Project, job.project_id) if job.project_id else None
    skills = load_skills(skill_folders(settings, job.project_id))
    ctx = PromptContext(
        project_id=job.project_id,
        project_name=project.name if project else None,
        date=job.created_at.date(),
        session_prompt=session.system_prompt if session else None,
        default_persona=settings.system_prompt,
        user_turns=sum(1 for m in history if m.role == "user"),
        skills_index=skills_index(skills),
        memory=memory,
    )
    return JobPrompt(system=assemble(settings, ctx), skills=skills)
