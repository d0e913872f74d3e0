"""Absolute disk caps on workspaces: per workspace and per user, before, during, after an exec.

Before an exec the workspace and its user's total are measured (the user's
sessions read in the exec's claim statement, see :func:`sessions_read`); one at its cap
refuses the exec (``workspace_full`` / ``user_disk_full``, with the numbers).
During it the backend's watchdog kills the run once the workspace passes
:attr:`DiskAllowance.limit` (docker polls every second). After it, whatever
the poll missed (a write faster than a poll) is caught by measuring again: a
run that ended over its limit, or was killed for disk, has what it wrote taken
back -- files it created are removed, files it grew are cut back to their
earlier size -- so an exec killed for quota leaves the workspace as it found
it, never over the cap. Files the run only rewrote in place are left alone.
The after-check measures the user's other workspaces again, so of two execs
of one user in two sessions at once, the one that ends last and would carry
the total past the user's cap is taken back. A run that created or grew no
file (and was not killed) has nothing to take back and cannot carry the total
past a cap: its after-check reads neither the user's sessions nor their
workspaces (``SandboxRuntime._after_check``). Each side of an exec walks its
workspace once (``workspace_scan``).

Why polled and not a filesystem quota: see the README ("Disk caps").
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import ARRAY, ColumnElement, Uuid, false, func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import autocommit
from services.common.models import ChatSession, Job
from services.common.workspace_usage import MB, directory_bytes, session_workspace
from services.sandbox.settings import SandboxSettings
from services.sandbox.statement import autocommit_connection

QUOTA_KILL = "workspace_quota"


def _mb(n: int) -> str:
    return f"{n / MB:.1f} MB"


@dataclass(frozen=True)
class DiskAllowance:
    """What one exec may use: the workspace's and its user's usage and caps, in bytes."""

    workspace_bytes: int
    workspace_cap: int
    user_bytes: int  # all of the user's workspaces, this one included
    user_cap: int

    @property
    def limit(self) -> int:
        """The size this workspace may reach during the exec (whichever cap is nearer)."""
        others = self.user_bytes - self.workspace_bytes
        return min(self.workspace_cap, self.user_cap - others)

    def refusal(self) -> dict[str, Any] | None:
        """The refused result when either cap is already reached, else None."""
        hint = "delete files in the workspace (or whole sessions) before running more code"
        if self.workspace_bytes >= self.workspace_cap:
            code = "workspace_full"
            message = (
                f"the workspace is full: {_mb(self.workspace_bytes)} used of its "
                f"{_mb(self.workspace_cap)} cap; {hint}"
            )
        elif self.user_bytes >= self.user_cap:
            code = "user_disk_full"
            message = (
                f"your workspaces are full: {_mb(self.user_bytes)} used in all of your "
                f"sessions, of the {_mb(self.user_cap)} allowed per user; {hint}"
            )
        else:
            return None
        return {
            "status": "refused",
            "error": {"code": code, "message": message},
            "disk": self.report(self.workspace_bytes),
        }

    def report(
        self, workspace_now: int, *, removed_files: int = 0, removed_bytes: int = 0
    ) -> dict[str, int]:
        return {
            "workspace_bytes": workspace_now,
            "workspace_cap_bytes": self.workspace_cap,
            "user_bytes": self.user_bytes - self.workspace_bytes + workspace_now,
            "user_cap_bytes": self.user_cap,
            "removed_files": removed_files,
            "removed_bytes": removed_bytes,
        }


def lookup_owner(
    factory: sessionmaker[Session], session_id: str | None, job_id: str | None
) -> tuple[uuid.UUID | None, bool]:
    """The user whose disk an exec uses, from Postgres (never from the caller), and
    whether the answer can never change (the row that gave it exists)."""
    sid, jid = _uuid(session_id), _uuid(job_id)
    with autocommit(factory) as s:  # plain reads: no BEGIN/ROLLBACK around them
        user = s.scalar(select(ChatSession.user_id).where(ChatSession.id == sid)) if sid else None
        if user is not None:
            return user, True
        if sid is not None:
            # Named but not (yet) found: answer from the job, but ask again next time.
            user = s.scalar(select(Job.user_id).where(Job.id == jid)) if jid else None
            return user, False
        user = s.scalar(select(Job.user_id).where(Job.id == jid)) if jid else None
        return user, user is not None


class Owners:
    """``lookup_owner`` remembered per worker: a session's or a job's user never changes,
    so each is read from Postgres once (bounded; the oldest is forgotten first)."""

    def __init__(self, factory: sessionmaker[Session], *, size: int = 4096) -> None:
        self._factory = factory
        self._size = size
        self._known: OrderedDict[tuple[str | None, str | None], uuid.UUID] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, session_id: str | None, job_id: str | None) -> uuid.UUID | None:
        key = (session_id, job_id)
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                self._known.move_to_end(key)
                return known
        user, final = lookup_owner(self._factory, session_id, job_id)
        if final and user is not None:
            with self._lock:
                self._known[key] = user
                while len(self._known) > self._size:
                    self._known.popitem(last=False)
        return user


def _uuid(raw: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw) if raw else None
    except ValueError:
        return None


def sessions_read(user_id: uuid.UUID | None) -> ColumnElement[list[uuid.UUID]]:
    """The user's session ids as one SQL value, for the exec's claim to read
    (``executions.claim``'s ``reads``): no round trip of its own."""
    ids = select(ChatSession.id).where(ChatSession.user_id == user_id)
    if user_id is None:
        ids = ids.where(false())
    return func.array(ids.scalar_subquery(), type_=ARRAY(Uuid()))


def user_sessions(factory: sessionmaker[Session], user_id: uuid.UUID | None) -> list[uuid.UUID]:
    """The user's session ids, read now (the after-check's view)."""
    if user_id is None:
        return []
    with autocommit_connection(factory) as conn:  # a plain read: no BEGIN/ROLLBACK around it
        return list(conn.scalars(select(ChatSession.id).where(ChatSession.user_id == user_id)))


def allowance(
    settings: SandboxSettings,
    workspace: Path,
    sessions: Iterable[uuid.UUID],
    *,
    here: int | None = None,
) -> DiskAllowance:
    """Measure the workspace and the user's others (``sessions``: all of the user's).

    ``here`` is the workspace's size from a walk just taken (the exec's own scan, see
    ``workspace_scan``); the user's other workspaces are always measured now.
    """
    if here is None:
        here = directory_bytes(workspace)
    # This workspace counts once, measured now (it may not be a session's); a session
    # with no directory adds nothing.
    others = sum(
        directory_bytes(session_workspace(settings.workspaces_dir, sid))
        for sid in sessions
        if str(sid) != workspace.name
    )
    return DiskAllowance(
        workspace_bytes=here,
        workspace_cap=settings.sandbox_workspace_max_mb * MB,
        user_bytes=here + others,
        user_cap=settings.sandbox_user_disk_max_mb * MB,
    )


def file_sizes(root: Path) -> dict[str, int]:
    """Size of every regular file under ``root`` by relative path (no symlink followed)."""
    sizes: dict[str, int] = {}
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                sizes[os.path.relpath(path, root)] = st.st_size
    return sizes


@dataclass(frozen=True)
class Trimmed:
    files: int
    bytes: int


def take_back(root: Path, before: dict[str, int]) -> Trimmed:
    """Remove files created since ``before``, cut grown ones back to their old size."""
    files = freed = 0
    for rel, size in file_sizes(root).items():
        old = before.get(rel)
        if old is not None and size <= old:
            continue
        path = root / rel
        try:
            if old is None:
                os.unlink(path)
            else:
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                try:
                    os.ftruncate(fd, old)
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP):
                raise
            continue
        files += 1
        freed += size - (old or 0)
    return Trimmed(files=files, bytes=freed)


def enforce_after(
    root: Path,
    before: dict[str, int],
    allowed: DiskAllowance,
    killed_reason: str | None,
    *,
    measured: int | None = None,
) -> tuple[dict[str, int], bool]:
    """Measure after the exec and take back an over-limit run's writes.

    ``measured`` is the workspace's size from the walk taken after the run, else it
    is measured here. Returns the usage report and whether the run went over (killed
    for disk); taking back walks the workspace again (the files as they are then).
    """
    now = directory_bytes(root) if measured is None else measured
    if now <= allowed.limit and killed_reason != QUOTA_KILL:
        return allowed.report(now), False
    trimmed = take_back(root, before)
    after = directory_bytes(root)
    return allowed.report(after, removed_files=trimmed.files, removed_bytes=trimmed.bytes), True
