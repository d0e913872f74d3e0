"""Which library collections a user may read and write: their own, every
project's they are a member of, and the lab's (one shared by every active user of
the deployment); and who may remove a document from one. Always
derived from the database, never from what a caller says (the API and the
library service both ask here)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.contracts.collections import Collection
from services.common.models import Document, Project, ProjectMember, User

# The lab-wide collection: every active user reads it and may add to it; only an
# uploader or an admin removes from it (``may_remove``: it belongs to no project).
LAB_COLLECTION = Collection.LAB


def member_projects(db: Session, user_id: uuid.UUID) -> dict[str, uuid.UUID]:
    """Project name and id (as text) → id, for every project the user belongs to."""
    rows = db.execute(
        select(Project.id, Project.name)
        .join(ProjectMember, ProjectMember.project_id == Project.id)
        .where(ProjectMember.user_id == user_id)
    ).all()
    projects: dict[str, uuid.UUID] = {}
    for pid, name in rows:
        projects[name] = pid
        projects[str(pid)] = pid
    return projects


def readable_collections(db: Session, user_id: uuid.UUID) -> list[Collection] | None:
    """The user's collections, or None when no active user has this id."""
    user = db.get(User, user_id)
    if user is None or user.disabled:
        return None
    projects = sorted({Collection.project(p) for p in member_projects(db, user_id).values()})
    return [Collection.personal(user_id), *projects, LAB_COLLECTION]


def may_remove(db: Session, *, user_id: uuid.UUID, doc: Document) -> bool:
    """Whether a user who can read ``doc`` may delete it: its uploader, an admin, or
    an ``owner`` of its project — a plain member writes only their own papers, as
    with every other project object (``services/api/access.py``)."""
    if doc.owner_id == user_id:
        return True
    user = db.get(User, user_id)
    if user is None or user.disabled:
        return False
    if user.is_admin:
        return True
    if doc.project_id is None:
        return False
    role = db.scalar(
        select(ProjectMember.role).where(
            ProjectMember.project_id == doc.project_id, ProjectMember.user_id == user_id
        )
    )
    return role == "owner"
