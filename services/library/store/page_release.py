"""Hand the embedded store's file pages back, periodically: out of the process's
RSS, and (by default) out of the page cache too, so searches map back only the
pages they read.

Why: Edge writes its vectors, payloads and sparse storage through shared file
mappings, and every page it writes stays mapped in this process — 2.1 GB of
RSS per million chunks that no search needs again (the dense candidates come
from the int8 graphs; a search reads a few hundred vectors and payloads).

Unmapping alone does not last: the page cache still holds the whole files
after a bulk load, and a fault on a file mapping also maps the cached pages
around it (the kernel's fault-around, 64 KB and more with large folios, which
``MADV_RANDOM`` does not turn off), so a hundred searches at a million chunks
map 1.3 GB back. With ``drop_cache`` a release therefore also

- marks the mappings ``MADV_RANDOM``: a fault reads only its own page, no
  readahead (Edge maps its read-only views ``MADV_SEQUENTIAL``, which reads
  ahead hundreds of KB per fault);
- reclaims the mapped pages with ``MADV_PAGEOUT`` (unmapped and, if clean,
  dropped from the page cache; it never discards data, on whatever mapping the
  range holds: a shared file page is written back first, an anonymous one is
  swapped or kept), then ``posix_fadvise(DONTNEED)`` drops the files' clean
  pages that were cached but not mapped (a hint: dirty or mapped pages stay).

The cache then holds only pages searches read since, so fault-around finds few
neighbours to map, and RSS grows by about the pages a search touches. The price
is a disk read for each page a search touches first after a release (measured in
``bench/library_scale.py``, bench/RESULTS.md 2026-12-07 fourth session).

Without ``drop_cache`` a release only unmaps (``MADV_DONTNEED`` on the shared
file mappings: the pages stay cached and map again on the next read). Private
mappings are never touched (there ``MADV_DONTNEED`` would drop data).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from services.common.periodic import STOP, Periodic

log = logging.getLogger(__name__)

MADV_RANDOM = 1
MADV_DONTNEED = 4
MADV_PAGEOUT = 21  # Linux 5.4+


def _shared_mappings(root: Path) -> list[tuple[int, int, str]]:
    """``(start, end, path)`` of this process's shared mappings of files under ``root``."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/maps") as maps:
        lines = maps.readlines()
    found = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[1][3] != "s" or not fields[5].startswith(prefix):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        found.append((start, end, fields[5].rstrip("\n")))
    return found


def _drop_cached(path: str) -> None:
    """Drop the clean, unmapped page cache of one file (a file Edge has since
    deleted reads ``... (deleted)`` in the maps and is skipped)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def release(root: Path, *, drop_cache: bool = False) -> int:
    """Release the resident pages of this process's shared file mappings under
    ``root`` (with ``drop_cache``, their page cache too); returns how many
    mappings were released (0 off Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    released, files = 0, set()
    # ctypes drops the GIL for each call: searches go on meanwhile.
    for start, end, path in _shared_mappings(root):
        if drop_cache:
            libc.madvise(start, end - start, MADV_RANDOM)
            done = libc.madvise(start, end - start, MADV_PAGEOUT) == 0
            files.add(path)
        else:
            done = libc.madvise(start, end - start, MADV_DONTNEED) == 0
        released += done
    for path in sorted(files):
        _drop_cached(path)
    return released


class PageRelease:
    """A :class:`Periodic` that calls :func:`release` every ``interval_s``, holding
    ``lock`` (the store's): a mapping read from ``/proc/self/maps`` must not be
    unmapped and its range reused before the ``madvise`` — Edge maps and unmaps
    its files inside its calls, which that lock serialises. Once per process (each
    process has its own mappings); ``interval_s`` 0 turns it off.

    ``scanning`` says whether the store's dense searches read every vector now
    (no dense index, or one being rebuilt: Edge's exact search answers). Then the
    page cache is what keeps those scans fast — one cold scan without readahead
    reads ~40 MB/s here — so a ``drop_cache`` tick leaves the pages alone."""

    def __init__(
        self,
        root: Path,
        interval_s: float,
        lock: threading.RLock,
        *,
        drop_cache: bool = False,
        scanning: Callable[[], bool] = lambda: False,
    ) -> None:
        self.root = root
        self.interval_s = interval_s
        self.drop_cache = drop_cache
        self._scanning = scanning
        self._lock = lock
        self._loop = Periodic(
            "library-pages", interval_s, self._tick, failure="library: store pages not released"
        )

    def start(self) -> None:
        if self.interval_s > 0:
            self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> bool | None:
        try:
            with self._lock:
                if not (self.drop_cache and self._scanning()):
                    release(self.root, drop_cache=self.drop_cache)
        except OSError:  # /proc unreadable (a sandbox): resident pages stay, nothing else
            log.warning("library: store pages not released", exc_info=True)
            return STOP
        return None
