"""Content-addressed store for uploaded PDFs (``<root>/<sha256[:2]>/<sha256>.pdf``).

On one host this is a folder under LEAFLAB_HOME; across hosts, mount a shared
volume at LEAFLAB_FILES_DIR so every ingest worker sees the same files.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def path(self, content_hash: str) -> Path:
        return self.root / content_hash[:2] / f"{content_hash}.pdf"

    def put(self, data: bytes) -> str:
        content_hash = self.digest(data)
        target = self.path(content_hash)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)  # atomic: a reader never sees half a file
        return content_hash
