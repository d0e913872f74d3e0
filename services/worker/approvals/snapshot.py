"""Protected files of a workspace, copied aside around one sandbox call.

``bash``/``python`` run model-written code that may write any file, so the rule
"a protected file changes only with a human's approval" is kept by comparison:
before the call, every protected file is copied into a *stash* outside the
workspace (the sandbox never sees it); after it, the workspace is walked again
and every protected path whose state differs is put back as it was, its new
state kept in the stash until a human decides (``exec_hold.py``).

Bounded: the walk stops after ``max_entries`` directory entries (and never
descends into a ``.git`` directory except its ``hooks``; its ``config`` file is
looked at), and only protected files are copied, at most ``max_files`` of them
and ``max_bytes`` together. Unchanged files are recognised by inode, size,
mode, mtime *and ctime* (which no unprivileged process can set back), so only
files whose metadata moved are hashed. Every file is opened with O_NOFOLLOW
and every parent checked to lie inside the workspace: the sandbox may have
planted symlinks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from services.worker.approvals.protected import ProtectedPaths
from services.worker.tools.base import ToolError
from services.worker.tools.files.editing import unified_diff
from services.worker.tools.workspace import looks_binary, resolve

MANIFEST = "manifest.json"
TEXT_DIFF_MAX_BYTES = 1_000_000


class TooMuchToHold(Exception):
    """The workspace's protected files exceed the bounds: they cannot be copied aside."""


@dataclass(frozen=True)
class Entry:
    """One protected path as it is on disk (``lstat``), plus its content hash once known."""

    kind: str  # "file" | "symlink" | "other"
    ino: int
    size: int
    mode: int
    mtime_ns: int
    ctime_ns: int
    link: str | None = None
    sha256: str | None = None

    def same_stat(self, other: Entry) -> bool:
        mine = (self.kind, self.ino, self.size, self.mode, self.mtime_ns, self.ctime_ns)
        theirs = (other.kind, other.ino, other.size, other.mode, other.mtime_ns, other.ctime_ns)
        return mine == theirs and self.link == other.link

    def same_content(self, other: Entry | None) -> bool:
        if other is None:
            return False
        return (self.kind, self.mode, self.link, self.sha256) == (
            other.kind,
            other.mode,
            other.link,
            other.sha256,
        )


@dataclass(frozen=True)
class Change:
    """A protected path whose state the call changed; ``after`` None: it was deleted."""

    path: str
    before: Entry | None
    after: Entry | None
    held: bool  # the new state is in the stash (re-applied if approved)
    diff: str

    @property
    def change(self) -> str:
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "modified"


def _entry(path: Path) -> Entry | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    kind = "file" if stat.S_ISREG(st.st_mode) else "other"
    link = None
    if stat.S_ISLNK(st.st_mode):
        kind, link = "symlink", os.readlink(path)
    return Entry(
        kind, st.st_ino, st.st_size, st.st_mode & 0o7777, st.st_mtime_ns, st.st_ctime_ns, link
    )


def scan(root: Path, protected: ProtectedPaths, *, max_entries: int) -> dict[str, Entry]:
    """Protected paths under ``root`` (symlinks not followed); raises TooMuchToHold
    when the walk would pass ``max_entries`` entries."""
    found: dict[str, Entry] = {}
    seen = 0
    stack: list[tuple[Path, str, bool]] = [(root, "", False)]
    while stack:
        directory, prefix, in_git = stack.pop()
        try:
            with os.scandir(directory) as it:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        except OSError:
            continue
        seen += len(names)
        if seen > max_entries:
            raise TooMuchToHold(f"the workspace has more than {max_entries} entries")
        for name, is_dir in names:
            rel = f"{prefix}{name}"
            if is_dir:
                # Git internals are data, except hooks (run by git) and config.
                if in_git and name.lower() != "hooks":
                    continue
                stack.append((directory / name, f"{rel}/", name.lower() == ".git"))
            elif (not in_git or name.lower() == "config" or "/hooks/" in rel.lower()) and (
                protected.match(rel)
            ):
                entry = _entry(directory / name)
                if entry is not None:
                    found[rel] = entry
    return found


def _open_regular(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def _copy_out(source: Path, blob: Path) -> str:
    """Copy a regular file into the stash, returning its hash."""
    digest = hashlib.sha256()
    fd = _open_regular(source)
    with os.fdopen(fd, "rb") as src, blob.open("wb") as dst:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
            dst.write(block)
    return digest.hexdigest()


def _hash(path: Path) -> str | None:
    try:
        fd = _open_regular(path)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Stash:
    """The stash of one call: ``before/`` and ``after/`` blobs and a manifest."""

    def __init__(self, directory: Path, root: Path) -> None:
        self.dir = directory
        self.root = root

    # -- before the call ---------------------------------------------------
    def take(self, entries: dict[str, Entry], *, max_files: int, max_bytes: int) -> None:
        files = {p: e for p, e in entries.items() if e.kind == "file"}
        total = sum(e.size for e in files.values())
        if len(files) > max_files or total > max_bytes:
            raise TooMuchToHold(
                f"{len(files)} protected files of {total} bytes (limits: {max_files} files, "
                f"{max_bytes} bytes)"
            )
        shutil.rmtree(self.dir, ignore_errors=True)
        (self.dir / "before").mkdir(mode=0o700, parents=True)
        (self.dir / "after").mkdir(mode=0o700)
        before: dict[str, dict[str, Any]] = {}
        for n, (path, entry) in enumerate(sorted(entries.items())):
            if entry.kind == "file":
                try:
                    sha = _copy_out(self.root / path, self.dir / "before" / str(n))
                except OSError:
                    continue  # vanished or swapped meanwhile: nothing to protect there
                entry = Entry(**{**asdict(entry), "sha256": sha})
            before[path] = {"entry": asdict(entry), "blob": f"before/{n}"}
        self._write({"before": before, "changes": None})

    def taken(self) -> bool:
        return (self.dir / MANIFEST).is_file()

    def _write(self, manifest: dict[str, Any]) -> None:
        tmp = self.dir / f"{MANIFEST}.tmp"
        tmp.write_text(json.dumps(manifest))
        os.replace(tmp, self.dir / MANIFEST)

    def _read(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / MANIFEST).read_text()))

    def before(self) -> dict[str, Entry]:
        return {p: Entry(**v["entry"]) for p, v in self._read()["before"].items()}

    # -- after the call ----------------------------------------------------
    def compare(self, after: dict[str, Entry], *, max_bytes: int) -> list[Change]:
        """Changed protected paths; their new content goes into ``after/`` (within
        ``max_bytes`` together; beyond it a change is not held and cannot be kept)."""
        before = self.before()
        changes: list[Change] = []
        recorded: list[dict[str, Any]] = []
        room = max_bytes
        for n, path in enumerate(sorted(set(before) | set(after))):
            old, new = before.get(path), after.get(path)
            if old is not None and new is not None and old.same_stat(new):
                continue
            if new is not None and new.kind == "file":
                sha = _hash(self.root / path) if new.size <= room else None
                new = Entry(**{**asdict(new), "sha256": sha})
            if old is not None and old.same_content(new):
                continue  # touched, or rewritten with the same bytes
            held = True
            blob = f"after/{n}"
            if new is not None and new.kind == "file":
                held = new.sha256 is not None and new.size <= room
                if held:
                    try:
                        _copy_out(self.root / path, self.dir / blob)
                        room -= new.size
                    except OSError:
                        held = False
            changes.append(Change(path, old, new, held, self._diff(path, old, new, blob, held)))
            recorded.append(
                {"path": path, "after": asdict(new) if new else None, "held": held, "blob": blob}
            )
        manifest = self._read()
        manifest["changes"] = recorded
        self._write(manifest)
        return changes

    def changes(self) -> list[tuple[str, Entry | None, bool, str]]:
        """What :meth:`compare` recorded: (path, new state, held, blob)."""
        recorded = self._read().get("changes") or []
        return [
            (c["path"], Entry(**c["after"]) if c["after"] else None, c["held"], c["blob"])
            for c in recorded
        ]

    def _text(self, blob: str) -> str | None:
        raw = (self.dir / blob).read_bytes()
        if len(raw) > TEXT_DIFF_MAX_BYTES or looks_binary(raw[:8192]):
            return None
        return raw.decode("utf-8", errors="replace")

    def _diff(self, path: str, old: Entry | None, new: Entry | None, blob: str, held: bool) -> str:
        def side(entry: Entry | None, blob: str) -> str | None:
            if entry is None:
                return ""
            return self._text(blob) if entry.kind == "file" else None

        old_blob = self._read()["before"].get(path, {}).get("blob", "")
        a = side(old, old_blob)
        b = side(new, blob) if held else None
        if a is not None and b is not None:
            return unified_diff(path, a, b)
        return f"({_describe(old)} → {_describe(new)})"

    # -- putting states back -------------------------------------------------
    def put(self, path: str, entry: Entry | None, blob: str | None) -> None:
        """Make ``path`` be ``entry`` again (its content from ``blob``); None: absent."""
        target = self._target(path)
        parent = target.parent
        current = _entry(target)
        if os.path.isdir(target) and not os.path.islink(target):
            raise ToolError("not_restorable", f"{path} is now a directory")
        if entry is None or entry.kind != "file":
            if current is not None:
                os.unlink(target)
            if entry is not None and entry.kind == "symlink" and entry.link is not None:
                parent.mkdir(parents=True, exist_ok=True)
                os.symlink(entry.link, target)
            return
        assert blob is not None
        if current is not None and current.kind != "file":
            os.unlink(target)
        parent.mkdir(parents=True, exist_ok=True)
        # In place (O_TRUNC, no rename): the file keeps its inode and the ACL
        # that lets the sandbox uid write it.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(target, flags, 0o666)
        with os.fdopen(fd, "wb") as dst, (self.dir / blob).open("rb") as src:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fchmod(dst.fileno(), entry.mode)
            os.utime(dst.fileno(), ns=(entry.mtime_ns, entry.mtime_ns))
            os.fsync(dst.fileno())

    def restore(self, paths: list[str]) -> list[str]:
        """Put ``paths`` back as before the call; returns those that could not be."""
        manifest = self._read()["before"]
        failed = []
        for path in paths:
            old = manifest.get(path)
            try:
                if old is None:
                    self.put(path, None, None)
                else:
                    self.put(path, Entry(**old["entry"]), old["blob"])
            except (OSError, ToolError):
                failed.append(path)
        return failed

    def _target(self, path: str) -> Path:
        """``path`` itself (not followed), under a parent proven inside the workspace."""
        head, _, name = path.rpartition("/")
        parent = resolve(self.root, head) if head else self.root.resolve()
        return parent / name

    def state_of(self, path: str) -> Entry | None:
        """The path's state now, hashed (to compare with a recorded one)."""
        try:
            target = self._target(path)
        except ToolError:
            return None
        entry = _entry(target)
        if entry is not None and entry.kind == "file":
            entry = Entry(**{**asdict(entry), "sha256": _hash(target)})
        return entry

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _describe(entry: Entry | None) -> str:
    if entry is None:
        return "absent"
    if entry.kind == "symlink":
        return f"symlink to {entry.link}"
    if entry.kind == "file":
        return f"{entry.size} bytes, mode {entry.mode:o}"
    return "a special file"
