"""Workspaces of deleted sessions leave the disk: on the API's request, and by a sweep.

Deleting a session (a soft delete in Postgres) asks a sandbox worker, after the
commit, to drop that session's workspace: its warm container and pool entry,
then the directory. The request can be lost (the API or the broker dies after
the commit), so the janitor also sweeps: every session-named directory whose
session is deleted goes, and one whose session is unknown to the database (a
hard delete, a restored database) goes once older than the grace, since it may
belong to a session whose row is being committed right now. The database is the
only judge: a request for a session that is not deleted removes nothing.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Job
from services.common.workspace_usage import session_id_of, session_workspace

log = logging.getLogger(__name__)

# Drops the backend's warm container and pool entry of a session key.
Forget = Callable[[str], None]


def drop(
    factory: sessionmaker[Session], workspaces_dir: Path, session_id: str, forget: Forget
) -> bool:
    """Remove the workspace of ``session_id`` if Postgres says the session is deleted."""
    parsed = session_id_of(session_id)
    if parsed is None:
        return False
    with factory() as s:
        row = s.get(ChatSession, parsed)
        if row is None or row.deleted_at is None:
            return False
    return _remove(session_workspace(workspaces_dir, parsed), forget)


def sweep(
    factory: sessionmaker[Session], workspaces_dir: Path, *, grace_s: float, forget: Forget
) -> list[str]:
    """Remove workspaces of deleted or unknown sessions; returns the names removed."""
    try:
        names = os.listdir(workspaces_dir)
    except FileNotFoundError:
        return []
    candidates = {sid: name for name in names if (sid := session_id_of(name)) is not None}
    if not candidates:
        return []
    ids = list(candidates)
    with factory() as s:
        rows = s.execute(
            select(ChatSession.id, ChatSession.deleted_at).where(ChatSession.id.in_(ids))
        ).all()
        sessions = {row.id: row.deleted_at for row in rows}
        # A job without a session works in a directory named by the job's id.
        jobs = set(s.scalars(select(Job.id).where(Job.id.in_(ids))))
    removed = []
    now = time.time()
    for sid, name in candidates.items():
        path = workspaces_dir / name
        if sid in sessions:
            gone = sessions[sid] is not None
        else:
            gone = sid not in jobs and _age_s(path, now) > grace_s
        if gone and _remove(path, forget):
            removed.append(name)
    return removed


def _age_s(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return 0.0


def _remove(path: Path, forget: Forget) -> bool:
    forget(path.name)  # the container first: nothing may write in it while it goes
    if not path.exists():
        return False
    failures: list[str] = []
    shutil.rmtree(path, onerror=lambda _f, p, exc: failures.append(f"{p}: {exc[1]}"))
    if failures:
        log.warning("workspace %s only partly removed: %s", path, failures[:3])
        return False
    log.info("removed the workspace of deleted session %s", path.name)
    return True
