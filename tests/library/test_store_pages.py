"""Releasing the embedded store's file pages: they leave the process's resident
memory, every stored point still reads back the same, and (with the page cache
dropped too, the service's release) searches afterwards map back only the pages
they read instead of the cached files around them."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from services.library.lexical import SparseVector
from services.library.settings import LibrarySettings
from services.library.store import open_store, page_release
from services.library.store.ann import AnnParams
from services.library.store.ann_graph import RESCORE_MARGIN
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


# -- the page cache dropped too (the service's release) ---------------------------

# ~10 MB of payload pages (random text: Edge compresses payloads), ~9 MB of
# float16 vectors: far more than 20 searches of ~30 candidates read.
POINTS, TEXT, WIDE = 12_000, 800, 384
SEARCHES, LIMIT = 20, 20
# What those searches read: a page per candidate's vector and one per its payload
# (4 KB each), a quarter more for the trackers and index pages beside them.
READ_KB = SEARCHES * (LIMIT + RESCORE_MARGIN) * 2 * 4 * 5 // 4


def _on_tmpfs(path: Path) -> bool:
    """tmpfs pages are not page cache that a hint can drop."""
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, mount, fstype, *_ = line.split()
        if str(path.resolve()).startswith(mount) and len(mount) > len(best):
            best, kind = mount, fstype
    return kind in ("tmpfs", "ramfs")


def _loaded_store(
    root: Path, release_pages_s: float = 0.0, release_page_cache: bool = False
) -> tuple[EdgeStore, list[StoredChunk]]:
    if _on_tmpfs(root):
        pytest.skip("the store's folder is on tmpfs")
    rng = np.random.default_rng(5)
    store = EdgeStore(
        root / "edge",
        AnnParams(ef_search=64),
        release_pages_s,
        dense_datatype="float16",
        release_page_cache=release_page_cache,
    )
    store.ensure(WIDE)
    letters = rng.integers(97, 123, size=(POINTS, TEXT), dtype=np.uint8)
    points = [
        StoredChunk(
            str(uuid.uuid4()),
            rng.normal(size=WIDE).astype(np.float32).tolist(),
            SparseVector([i % 50], [1.0]),
            {
                "collection": "project:a",
                "document_id": f"d{i}",
                "text": letters[i].tobytes().decode(),
            },
        )
        for i in range(POINTS)
    ]
    for start in range(0, POINTS, 2000):
        store.upsert(points[start : start + 2000])
    _settled(store)
    return store, points


def _settled(store: EdgeStore) -> None:
    assert store.ann is not None
    deadline = time.monotonic() + 120
    while store.ann.backlog or not store.ann.status().ready:
        assert time.monotonic() < deadline, "the dense index never caught up"
        time.sleep(0.1)


def _searches(store: EdgeStore, points: list[StoredChunk]) -> list[list[tuple[str, object]]]:
    return [
        [
            (h.id, h.payload)
            for h in store.search_dense(points[i * 7].dense, collections=["project:a"], limit=LIMIT)
        ]
        for i in range(SEARCHES)
    ]


def test_searches_after_a_release_map_back_only_what_they_read(tmp_path: Path) -> None:
    store, points = _loaded_store(tmp_path)
    try:
        loaded = _resident_kb(store.path)
        assert loaded > 18_000  # everything written is mapped
        before = _searches(store, points)
        # main's release: unmapped, but fault-around maps the cached file back
        page_release.release(store.path)
        assert _searches(store, points) == before
        unmapped_then_searched = _resident_kb(store.path)
        assert unmapped_then_searched > loaded // 2
        # the service's: the page cache goes too, and no readahead
        assert page_release.release(store.path, drop_cache=True) > 0
        assert _resident_kb(store.path) < 500
        assert _searches(store, points) == before  # the same hits and payloads
        assert _resident_kb(store.path) < READ_KB < unmapped_then_searched // 2
        more = [  # writes after a release land as before
            StoredChunk(str(uuid.uuid4()), p.dense, p.sparse, {**p.payload, "collection": "b"})
            for p in points[:10]
        ]
        store.upsert(more)
        assert store.count(collections=["project:a"]) == POINTS
    finally:
        store.close()
    reopened = EdgeStore(tmp_path / "edge", AnnParams(ef_search=64))
    reopened.ensure(WIDE)
    try:  # nothing was lost: every point counted, the same hits after a restart
        _settled(reopened)
        assert reopened.count(collections=["project:a"]) == POINTS
        assert reopened.count(collections=["b"]) == 10
        assert _searches(reopened, points) == before
    finally:
        reopened.close()


def test_the_services_store_releases_periodically_but_not_while_exact_search_scans(
    tmp_path: Path,
) -> None:
    settings = LibrarySettings(qdrant_url=None, library_release_store_pages_s=0.3)
    assert settings.library_release_store_page_cache  # the cache goes by default
    store = open_store(settings, path=tmp_path)
    assert isinstance(store, EdgeStore)
    store.close()
    store, points = _loaded_store(tmp_path, 0.3, release_page_cache=True)
    try:
        deadline = time.monotonic() + 10
        while _resident_kb(store.path) > 500:  # a tick released the written pages
            assert time.monotonic() < deadline, "no release came"
            time.sleep(0.1)
        _searches(store, points)
        assert _resident_kb(store.path) < READ_KB
    finally:
        store.close()
    # Edge's exact search (no dense index) reads every vector: the ticks leave the
    # page cache and the mappings alone, so those scans stay in memory.
    exact = EdgeStore(tmp_path / "edge", None, 0.3, release_page_cache=True)
    exact.ensure(WIDE)
    try:
        _searches(exact, points)
        mapped = _resident_kb(exact.path)
        time.sleep(1.0)  # three ticks
        assert _resident_kb(exact.path) >= mapped * 0.9
    finally:
        exact.close()
