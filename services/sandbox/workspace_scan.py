"""One walk of a workspace on each side of an exec, read by everything that needs it.

Before an exec the disk caps need the workspace's size (and each file's, to take back
an over-limit run's writes), the watchdog its baseline, and the artifact scan a
snapshot of its files; after it, the caps and the artifacts need the same again.
Each of those used to walk the tree itself (seven walks per exec); a :class:`Scan`
is one walk that answers all of them, so an exec walks its workspace twice: once
before it runs, once after (and once more only when a run has to be taken back).

The workspace is written by untrusted code, so the walk follows no symlink (a
symlinked directory is not entered, a symlinked file is not counted), counts only
regular files, and skips what it cannot read rather than failing the exec.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Helper directories the pool creates next to workspaces; never artifacts (their
# bytes still count against the disk caps).
SKIP_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints", ".matplotlib", ".cache"})
# The artifact snapshot stops after this many files (outside the helper directories).
MAX_SCAN_ENTRIES = 20_000

FileKey = tuple[int, int, int, int]  # dev, inode, size, mtime_ns


@dataclass(frozen=True)
class Scan:
    """Every regular file under a workspace, as one walk saw it."""

    files: dict[str, FileKey] = field(default_factory=dict)  # by relative path
    # The files an exec may turn into artifacts: outside SKIP_DIRS, the first
    # MAX_SCAN_ENTRIES of them in walk order.
    artifacts: dict[str, FileKey] = field(default_factory=dict)
    total: int = 0  # bytes of all regular files (what the disk caps count)

    @property
    def sizes(self) -> dict[str, int]:
        return {rel: key[2] for rel, key in self.files.items()}


def scan(root: Path) -> Scan:
    """Walk ``root`` once, top-down in directory order (``os.walk``'s); empty if absent."""
    files: dict[str, FileKey] = {}
    artifacts: dict[str, FileKey] = {}
    total = seen = 0
    # (directory, its path relative to root, whether it is inside a helper directory)
    stack: list[tuple[str, str, bool]] = [(str(root), "", False)]
    while stack:
        path, rel_dir, skipped = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            continue
        subdirs: list[tuple[str, str, bool]] = []
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((entry.path, rel + "/", skipped or entry.name in SKIP_DIRS))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            if not stat.S_ISREG(st.st_mode):
                continue
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            files[rel] = key
            total += st.st_size
            if not skipped:
                seen += 1
                if seen <= MAX_SCAN_ENTRIES:
                    artifacts[rel] = key
        stack.extend(reversed(subdirs))  # popped in directory order: os.walk's top-down
    return Scan(files=files, artifacts=artifacts, total=total)


def grown(before: Scan, after: Scan) -> bool:
    """Whether a file is new or larger in ``after``: all that taking back could undo.

    An exec that grew nothing cannot be what carries its user past a cap, so its
    after-check has nothing to measure the user's other workspaces for.
    """
    for rel, key in after.files.items():
        old = before.files.get(rel)
        if old is None or key[2] > old[2]:
            return True
    return False
