"""The store's memory after a page release and the searches that follow it, per
release mode (``services/library/store/page_release.py``): what the searches map
back, and what they cost against the same searches on a warm store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.process_memory import rss_by_file, rss_mb

FIELDS = ("VmRSS", "RssAnon", "RssFile")
# unmap: main's release (MADV_DONTNEED, the page cache kept); drop: also the page
# cache and readahead. In this order: after a drop the cache holds only what the
# searches read, which would flatter an unmap measured next.
MODES = ("unmap", "drop")


def release_pages(root: Path, mode: str) -> int | None:
    """Release the store's file pages as the service does (None: this code has
    no page release, or not this mode)."""
    try:
        from services.library.store.page_release import release
    except ImportError:
        return None
    if mode == "unmap":
        return release(root)
    try:
        return release(root, drop_cache=True)
    except TypeError:  # a checkout whose release has no drop_cache
        return None


def _pcts(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


def release_then_search(
    root: Path,
    search_ms: Callable[[], list[float]],
    rss0: dict[str, float],
    per_million: float,
) -> dict[str, Any]:
    """For each mode: release, run the searches (``search_ms`` returns each one's
    milliseconds), and read the RSS per million chunks right after the release
    and after the searches, with the store's file pages by file kind."""

    def rss() -> dict[str, int]:
        return {f: round((rss_mb(f) - rss0[f]) * per_million) for f in FIELDS}

    out: dict[str, Any] = {}
    for mode in MODES:
        if release_pages(root, mode) is None:
            out[mode] = None
            continue
        released = rss()
        times = search_ms()
        out[mode] = {
            "rss_after_release": released,
            "rss_after_queries": rss(),
            "store_files_after_queries": {
                k: round(v * per_million) for k, v in rss_by_file(root).items()
            },
            "hybrid_with_query_embedding": _pcts(times),
        }
    return out
