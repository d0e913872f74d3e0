"""A session's workspace, as the API sees it: disk usage against the caps, removal on delete.

The API never edits a workspace. It measures one (read only, on the shared
workspace volume) to show usage, and after a session delete commits it asks a
sandbox worker to remove the directory and the session's warm container; a
lost request is repaired by the sandbox janitor's sweep.
"""

from __future__ import annotations

import uuid

from celery import Celery
from opentelemetry import trace
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.api.settings import ApiSettings
from services.api.transaction import after_commit
from services.common.contracts.tasks import send_drop_workspace
from services.common.models import ChatSession
from services.common.workspace_usage import (
    MB,
    directory_bytes,
    session_workspace,
    user_workspaces_bytes,
)


class WorkspaceUsage(BaseModel):
    session_id: uuid.UUID
    bytes: int = Field(description="Size of the files in this session's workspace")
    cap_bytes: int = Field(description="The most this workspace may hold")
    user_bytes: int = Field(description="All of the session owner's workspaces together")
    user_cap_bytes: int = Field(description="The most one user's workspaces may hold")


def usage(db: Session, settings: ApiSettings, session: ChatSession) -> WorkspaceUsage:
    here = directory_bytes(session_workspace(settings.workspaces_dir, session.id))
    everything = user_workspaces_bytes(db, settings.workspaces_dir, session.user_id)
    return WorkspaceUsage(
        session_id=session.id,
        bytes=here,
        cap_bytes=settings.sandbox_workspace_max_mb * MB,
        user_bytes=sum(everything.values()),
        user_cap_bytes=settings.sandbox_user_disk_max_mb * MB,
    )


def drop_after_commit(db: Session, celery: Celery, queue: str, session_id: uuid.UUID) -> None:
    """Once the delete is committed, ask a sandbox worker to remove the workspace."""

    def send() -> None:
        try:
            send_drop_workspace(celery, session_id, queue=queue)
        except Exception:  # broker down: the row says deleted; the sandbox sweep removes it
            trace.get_current_span().add_event(
                "workspace_drop_failed", {"session": str(session_id)}
            )

    after_commit(db, send)
