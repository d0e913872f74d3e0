"""New or changed workspace files after an exec become job artifacts (Postgres rows).

The workspace is written by untrusted code, so it is read defensively: no
symlink is followed, each file is opened with O_NOFOLLOW and must still be
the inode seen by the scan, and sizes and counts are capped.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from services.common.models.jobs import Artifact
from services.sandbox.workspace_scan import MAX_SCAN_ENTRIES, SKIP_DIRS, FileKey, scan

__all__ = ["MAX_SCAN_ENTRIES", "SKIP_DIRS", "FileKey", "collect", "snapshot", "store"]


@dataclass(frozen=True)
class FoundFile:
    name: str
    size: int
    mime: str
    sha256: str
    content: bytes


def snapshot(root: Path) -> dict[str, FileKey]:
    """Regular files under ``root`` by relative path (symlinked dirs not entered)."""
    return scan(root).artifacts


def changed(before: dict[str, FileKey], after: dict[str, FileKey]) -> list[str]:
    return sorted(name for name, key in after.items() if before.get(name) != key)


def read_safely(root: Path, name: str, key: FileKey, max_bytes: int) -> bytes | None:
    """File content if it is still the scanned regular file and small enough."""
    if key[2] > max_bytes:
        return None
    try:
        fd = os.open(root / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != key[:2]:
            return None
        data = fh.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def collect(
    root: Path,
    before: dict[str, FileKey],
    *,
    max_bytes: int,
    max_count: int,
    after: dict[str, FileKey] | None = None,
) -> tuple[list[FoundFile], list[dict[str, Any]]]:
    """Changed files to store, and those skipped with the reason.

    ``after`` is a snapshot taken once the run is over (the exec's own walk), else
    one is taken now; each file is read only if it is still the inode seen there.
    """
    if after is None:
        after = snapshot(root)
    files: list[FoundFile] = []
    skipped: list[dict[str, Any]] = []
    for name in changed(before, after):
        key = after[name]
        if len(files) >= max_count:
            skipped.append({"name": name, "size": key[2], "reason": "too many artifacts"})
            continue
        content = read_safely(root, name, key, max_bytes)
        if content is None:
            reason = "too large" if key[2] > max_bytes else "changed while reading"
            skipped.append({"name": name, "size": key[2], "reason": reason})
            continue
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        files.append(
            FoundFile(
                name=name,
                size=len(content),
                mime=mime,
                sha256=hashlib.sha256(content).hexdigest(),
                content=content,
            )
        )
    return files, skipped


def store(session: Session, job_id: str, files: list[FoundFile]) -> None:
    """Upsert artifact rows; a file changed again by a later exec replaces its row."""
    for f in files:
        stmt = insert(Artifact).values(
            job_id=uuid.UUID(job_id),
            name=f.name,
            mime=f.mime,
            size=f.size,
            sha256=f.sha256,
            content=f.content,
        )
        session.execute(
            stmt.on_conflict_do_update(
                constraint="uq_artifacts_job_name",
                set_={"mime": f.mime, "size": f.size, "sha256": f.sha256, "content": f.content},
            )
        )


def describe(files: list[FoundFile]) -> list[dict[str, Any]]:
    return [{"name": f.name, "size": f.size, "mime": f.mime, "sha256": f.sha256} for f in files]
