"""Releasing the embedded store's written file pages: they leave the process's
resident memory, and every stored point still reads back the same (the pages
stay in the page cache and map again on the next read)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from services.library.lexical import SparseVector
from services.library.store import page_release
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and madvise")
DIM = 64


def _resident_kb(root: Path) -> int:
    """Resident KB of this process's mappings of files under ``root``."""
    prefix, total, inside = str(root.resolve()) + "/", 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's first line
                inside = len(head) >= 6 and head[5].startswith(prefix)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def test_released_pages_leave_rss_and_the_points_read_back_the_same(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    store = EdgeStore(tmp_path / "edge", None)  # Edge's own exact search: reads every vector
    store.ensure(DIM)
    try:
        points = []
        for i in range(3000):
            v = rng.normal(size=DIM).astype(np.float32)
            payload = {"collection": "project:a", "document_id": f"d{i}", "text": "x" * 500}
            points.append(
                StoredChunk(str(uuid.uuid4()), v.tolist(), SparseVector([1], [1.0]), payload)
            )
        store.upsert(points)
        q = points[11].dense
        before = [
            (h.id, h.payload) for h in store.search_dense(q, collections=["project:a"], limit=20)
        ]
        resident = _resident_kb(store.path)
        assert resident > 1000  # the written vectors and payloads are mapped
        assert page_release.release(store.path) > 0
        assert _resident_kb(store.path) < resident // 4
        after = [
            (h.id, h.payload) for h in store.search_dense(q, collections=["project:a"], limit=20)
        ]
        assert after == before and after[0][0] == points[11].id
        store.upsert(points[:10])  # writes after a release land as before
        assert store.count(collections=["project:a"]) == 3000
    finally:
        store.close()
    reopened = EdgeStore(tmp_path / "edge", None)  # what reached the files survives a restart
    reopened.ensure(DIM)
    try:
        hits = reopened.search_dense(q, collections=["project:a"], limit=20)
        assert [(h.id, h.payload) for h in hits] == before
    finally:
        reopened.close()
