"""Path confinement and safe file I/O inside one session workspace.

Every path a model supplies is relative to ``ctx.workspace``. The workspace is
also written by sandboxed code the model controls, so it may contain hostile
symlinks: a path is accepted only when its fully resolved form (all symlinks
followed, as the OS would) still lies inside the resolved workspace root.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from services.worker.tools.base import ToolError

MAX_PATH_CHARS = 1024
MAX_COMPONENT_CHARS = 255
# Binary sniffing looks at this many leading bytes (like git and grep do).
SNIFF_BYTES = 8192
# Directories never worth walking for glob/grep: version-control internals.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def outside(path: str, reason: str) -> ToolError:
    return ToolError(
        "path_outside_workspace",
        f"path {path!r} is outside the workspace ({reason}); use a path relative to it",
        category="validation",
        details={"path": path[:200], "reason": reason},
    )


def _check_syntax(path: str) -> None:
    if "\x00" in path:
        raise ToolError(
            "invalid_path", "path contains a NUL byte", category="validation", details={}
        )
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(
            "invalid_path",
            f"path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}",
            category="validation",
            details={"length": len(path)},
        )
    if any(len(part) > MAX_COMPONENT_CHARS for part in path.split("/")):
        raise ToolError(
            "invalid_path",
            f"a path component is longer than {MAX_COMPONENT_CHARS} characters",
            category="validation",
            details={"path": path[:200]},
        )


def workspace_root(workspace: Path, *, create: bool = False) -> Path:
    """The resolved workspace directory (created on demand for writers).

    Created private (0700): the sandbox service lets its own uid in through
    an ACL when it first runs code there, never by opening it to everyone.
    """
    if create:
        workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
    return workspace.resolve()


def resolve(workspace: Path, path: str, *, create_root: bool = False) -> Path:
    """Map a model-supplied relative path to an absolute path inside the workspace.

    Raises ``path_outside_workspace`` for absolute paths, ``..`` escapes and
    symlinks pointing out, and ``invalid_path`` for NUL bytes or absurd lengths.
    """
    _check_syntax(path)
    if path.startswith(("/", "\\")) or os.path.isabs(path):
        raise outside(path, "absolute paths are not allowed")
    root = workspace_root(workspace, create=create_root)
    # Path.resolve follows symlinks component by component before applying
    # "..", which is exactly how open() will interpret the path.
    try:
        target = (root / (path or ".")).resolve()
    except (RuntimeError, OSError) as exc:  # symlink loop, unreadable component
        raise ToolError(
            "invalid_path",
            f"path {path[:200]!r} cannot be resolved: {exc}",
            category="validation",
            details={"path": path[:200]},
        ) from None
    if target != root and not target.is_relative_to(root):
        reason = "symlink leads out" if ".." not in Path(path).parts else "'..' leads out"
        raise outside(path, reason)
    return target


def relative(workspace: Path, target: Path) -> str:
    """How a resolved path is shown to the model: relative, with forward slashes."""
    rel = target.relative_to(workspace_root(workspace))
    return rel.as_posix() if rel.parts else "."


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(target: Path) -> str | None:
    """Hash of a regular file's content, or None when there is no such file."""
    if not target.is_file():
        return None
    digest = hashlib.sha256()
    with target.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def looks_binary(sample: bytes) -> bool:
    """NUL bytes or mostly undecodable text mean a binary file."""
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    # A multi-byte character cut at the sample boundary yields one or two
    # replacement characters; only a real share of them means binary.
    return text.count("\ufffd") > max(2, len(text) // 20)


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` so readers never see a half-written file.

    The temp file lives in the same directory so ``os.replace`` is a rename on
    one filesystem; it replaces a symlink itself rather than following it.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.is_file() else 0o644
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name[:50]}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def not_found(path: str) -> ToolError:
    return ToolError(
        "file_not_found",
        f"{path!r} does not exist in the workspace; use glob to list files",
        category="tool",
        details={"path": path},
    )


def open_regular(target: Path, path: str) -> BinaryIO:
    """Open an existing regular file for reading, refusing anything else.

    O_NOFOLLOW refuses a symlink swapped in after :func:`resolve` checked the
    path, and O_NONBLOCK keeps a FIFO planted by sandboxed code from hanging
    the worker; fstat then confirms what was actually opened.
    """
    if target.is_dir():
        raise ToolError(
            "is_directory",
            f"{path!r} is a directory; use glob to list its files",
            category="validation",
            details={"path": path},
        )
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise not_found(path) from None
    except OSError as exc:
        raise ToolError(
            "unreadable_file", f"cannot open {path!r}: {exc.strerror}", details={"path": path}
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(
            "not_a_regular_file",
            f"{path!r} is not a regular file",
            category="validation",
            details={"path": path},
        )
    return os.fdopen(fd, "rb")
