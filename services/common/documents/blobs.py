"""Content-addressed store for uploaded PDFs (``<root>/<key[:2]>/<key>.pdf``).

On one host this is a folder under LEAFLAB_HOME; across hosts, mount one
shared volume at LEAFLAB_FILES_DIR for the API and every ingest worker.
Files are created 0600 and folders 0700: papers a member uploaded are theirs
and their projects', not every local account's.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o600
DIR_MODE = 0o700


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pdf"

    def _ensure_dir(self, path: Path) -> None:
        for folder in (self.root, path):
            folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            os.chmod(folder, DIR_MODE)  # mkdir's mode is masked by the umask

    def staging(self) -> tuple[Path, BinaryIO]:
        """A new private temp file inside the store (same file system: rename is atomic)."""
        folder = self.root / "incoming"
        self._ensure_dir(folder)
        path = folder / f"{uuid.uuid4().hex}.part"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        return path, os.fdopen(fd, "wb")

    def commit(self, staged: Path, key: str) -> Path:
        """Move a finished staging file to its key (a reader never sees half a file)."""
        target = self.path(key)
        self._ensure_dir(target.parent)
        if target.exists():
            staged.unlink(missing_ok=True)
        else:
            staged.replace(target)
        return target

    def put(self, data: bytes) -> str:
        key = self.digest(data)
        if not self.path(key).exists():
            staged, out = self.staging()
            with out:
                out.write(data)
            self.commit(staged, key)
        return key

    def remove(self, key: str) -> None:
        """Delete the file stored under ``key`` (nothing if it is not there)."""
        self.path(key).unlink(missing_ok=True)
