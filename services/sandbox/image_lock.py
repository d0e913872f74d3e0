"""One sandbox image build per machine: an exclusive ``flock`` beside Docker's data.

Docker's image store belongs to the machine, while ``LEAFLAB_HOME`` belongs to a
user or a test run, so a lock under the home lets concurrent first starts (three
were seen at once) each debootstrap their own copy. The lock lives at
``LEAFLAB_SANDBOX_IMAGE_LOCK``, else ``/var/lib/leaflab/image-build.lock`` (next to
``/var/lib/docker``) when that can be created, else under the user's cache dir.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from services.common.machine_cache import machine_cache_dir

log = logging.getLogger(__name__)

MACHINE_LOCK = Path("/var/lib/leaflab/image-build.lock")


def user_lock() -> Path:
    return machine_cache_dir() / "image-build.lock"


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.fchmod(fd, 0o666)  # any user's first start may need to wait on it
    except PermissionError:
        pass  # someone else's file that we may open: fine
    return fd


def open_lock(configured: Path | None) -> tuple[int, Path]:
    """The lock file's descriptor and path: the configured one, else the first usable."""
    if configured is not None:
        return _open(configured), configured
    try:
        return _open(MACHINE_LOCK), MACHINE_LOCK
    except OSError:  # not root and no /var/lib/leaflab: the user's cache
        path = user_lock()
        return _open(path), path


@contextmanager
def image_build_lock(configured: Path | None, tag: str) -> Iterator[Path]:
    """Hold the machine's image-build lock; says so when another build holds it."""
    fd, path = open_lock(configured)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another process is building the sandbox image; waiting (%s)", path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        log.debug("holding the image-build lock %s for %s", path, tag)
        yield path
    finally:
        os.close(fd)  # closing drops the lock
