"""Session workspaces as the sandbox sees them: access for the sandbox uid, adoption, size.

Guarantee: a workspace is never world-writable. The sandbox runs as another
uid than the workers (``sandbox_user``), so it is let in by a POSIX ACL on the
directory instead of mode 0777: the directory is 0700 for its owner, plus
named entries for the sandbox uid and the worker's own uid. The same entries
are the directory's *default* ACL, so everything created inside (by either
side) is readable and writable by both and by nobody else, whatever the umask.
Where the filesystem has no ACLs, a root worker hands the directory to the
sandbox uid instead (root still reaches it); a non-root worker cannot, and
says so rather than opening the directory to everyone.
"""

from __future__ import annotations

import errno
import os
import struct
import uuid
from pathlib import Path

from services.common.workspace_usage import directory_bytes as workspace_bytes
from services.sandbox.backends.base import SandboxUnavailable

__all__ = ["acl_bytes", "acl_users", "adopt_slot", "prepare_workspace", "workspace_bytes"]

# Linux's on-disk form of a POSIX ACL (include/uapi/linux/posix_acl_xattr.h):
# a version header, then (tag, perm, id) entries sorted by tag, then id.
ACL_ACCESS_XATTR = "system.posix_acl_access"
ACL_DEFAULT_XATTR = "system.posix_acl_default"
_ACL_VERSION = struct.Struct("<I")
_ACL_ENTRY = struct.Struct("<HHI")
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_NO_ID = 0xFFFFFFFF
_RWX = 7
WORKSPACE_MODE = 0o700


def acl_bytes(named_uids: set[int]) -> bytes:
    """An ACL: owner rwx, each named uid rwx, owning group and others nothing."""
    entries = [(_USER_OBJ, _RWX, _NO_ID)]
    entries += [(_USER, _RWX, uid) for uid in sorted(named_uids)]
    entries += [(_GROUP_OBJ, 0, _NO_ID), (_MASK, _RWX, _NO_ID), (_OTHER, 0, _NO_ID)]
    return _ACL_VERSION.pack(2) + b"".join(_ACL_ENTRY.pack(*e) for e in entries)


def acl_users(raw: bytes) -> dict[int, int]:
    """Named uid -> permission bits of an ACL as stored (for checks and tests)."""
    users: dict[int, int] = {}
    for offset in range(_ACL_VERSION.size, len(raw), _ACL_ENTRY.size):
        tag, perm, uid = _ACL_ENTRY.unpack_from(raw, offset)
        if tag == _USER:
            users[uid] = perm
    return users


def prepare_workspace(path: Path, *, sandbox_uid: int, sandbox_gid: int) -> None:
    """Create ``path`` (if needed) so the sandbox uid can write it, without opening it to all."""
    path.mkdir(mode=WORKSPACE_MODE, parents=True, exist_ok=True)
    os.chmod(path, WORKSPACE_MODE)
    acl = acl_bytes({sandbox_uid, os.geteuid()})
    try:
        os.setxattr(path, ACL_ACCESS_XATTR, acl)
        os.setxattr(path, ACL_DEFAULT_XATTR, acl)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        if os.geteuid() != 0:
            raise SandboxUnavailable(
                f"the workspace filesystem of {path} has no POSIX ACLs, and a non-root "
                "worker cannot hand the workspace to the sandbox user; mount it with ACLs "
                "(ext4, xfs, btrfs and tmpfs have them) or run the sandbox worker as root"
            ) from exc
        os.chown(path, sandbox_uid, sandbox_gid)


def adopt_slot(slot_dir: Path, workspace: Path) -> None:
    """Make ``workspace`` the directory mounted in a spare container.

    A rename keeps the inode, so the container's bind mount now shows the
    session's files; files already in the workspace are moved in by rename,
    never copied.
    """
    workspace.parent.mkdir(parents=True, exist_ok=True)
    if not workspace.exists():
        os.rename(slot_dir, workspace)
        return
    aside = workspace.parent / f".{workspace.name}.swap-{uuid.uuid4().hex[:8]}"
    os.rename(workspace, aside)
    try:
        os.rename(slot_dir, workspace)
    except OSError:
        os.rename(aside, workspace)
        raise
    for entry in os.listdir(aside):
        os.rename(aside / entry, workspace / entry)
    os.rmdir(aside)
