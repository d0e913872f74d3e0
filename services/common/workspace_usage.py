"""How much disk session workspaces use: measured on the workspace volume, read by all.

The sandbox enforces the caps with these numbers (before, during and after each
exec); the API shows them (the admin users listing, the session page). A
workspace is the directory ``<workspaces_dir>/<session id>`` (the canonical
UUID spelling the agent worker uses), so a user's usage is the sum over the
directories of that user's sessions, deleted ones included until they are swept.
"""

from __future__ import annotations

import os
import uuid
from collections import defaultdict
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.models import ChatSession

MB = 1024 * 1024


def directory_bytes(root: Path) -> int:
    """Total size of regular files under ``root`` (symlinks not followed; 0 if absent)."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def session_workspace(workspaces_dir: Path, session_id: uuid.UUID | str) -> Path:
    return workspaces_dir / str(session_id)


def session_id_of(name: str) -> uuid.UUID | None:
    """The session a workspace directory belongs to, when ``name`` is a session's spelling.

    Only the canonical form counts: job and scratch workspaces, the pool's slot
    directory and anything an operator put there are never taken for a session's.
    """
    try:
        parsed = uuid.UUID(name)
    except ValueError:
        return None
    return parsed if str(parsed) == name else None


def user_workspaces_bytes(
    db: Session, workspaces_dir: Path, user_id: uuid.UUID
) -> dict[uuid.UUID, int]:
    """Bytes on disk per session workspace of one user (sessions with no directory left out)."""
    ids = db.scalars(select(ChatSession.id).where(ChatSession.user_id == user_id))
    return _measure(workspaces_dir, list(ids))


def all_users_bytes(db: Session, workspaces_dir: Path) -> dict[uuid.UUID, int]:
    """Bytes on disk per user, over every session workspace (for the admin listing)."""
    rows = db.execute(select(ChatSession.id, ChatSession.user_id)).all()
    owners = {row.id: row.user_id for row in rows}
    totals: dict[uuid.UUID, int] = defaultdict(int)
    for session_id, size in _measure(workspaces_dir, list(owners)).items():
        totals[owners[session_id]] += size
    return dict(totals)


def _measure(workspaces_dir: Path, session_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    sizes: dict[uuid.UUID, int] = {}
    for session_id in session_ids:
        path = session_workspace(workspaces_dir, session_id)
        if path.is_dir():
            sizes[session_id] = directory_bytes(path)
    return sizes
