"""This process's resident memory, read from ``/proc/self``: in all, its heap and
file-page parts, and the file pages of one folder's files by file kind (the
library benchmarks measure the store's memory this way)."""

from __future__ import annotations

import re
from pathlib import Path


def rss_mb(field: str = "VmRSS") -> float:
    """Resident memory (MB): ``VmRSS`` in all, ``RssAnon`` (heap: what the kernel
    cannot take back) or ``RssFile`` (mapped file pages, e.g. Edge's mmap'd
    storage: page cache the kernel can reclaim under pressure)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_by_file(root: Path) -> dict[str, float]:
    """Resident MB of this process's mappings of the files under ``root``, by file
    kind (the path with segment ids and numbers folded to ``*``): which of Edge's
    stores (vectors, payloads, sparse vectors, WAL) the file pages belong to."""
    prefix, key = str(root.resolve()) + "/", None
    out: dict[str, float] = {}
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's first line
                path = head[5] if len(head) >= 6 else ""
                key = _FOLD.sub("*", path[len(prefix) :]) if path.startswith(prefix) else None
            elif key is not None and line.startswith("Rss:"):
                out[key] = out.get(key, 0.0) + int(head[1]) / 1024
    # Files under 1 MB (trackers' headers, flags) are left out.
    return dict(sorted(((k, v) for k, v in out.items() if v >= 1), key=lambda kv: -kv[1]))


_FOLD = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+")
