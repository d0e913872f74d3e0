"""The dense index saved next to the embedded store: a reopened store answers at
once from the loaded graphs (the same hits as exact search), catches up with
writes the save never saw, and rebuilds from the store when a saved file is
truncated or damaged — never loading wrong graphs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from services.library.lexical import SparseVector
from services.library.store import ann_files
from services.library.store.ann import AnnParams, AnnStatus
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

DIM = 16
COLLECTIONS = ["project:a", "project:b"]
# Small graphs searched with a wide beam: the graph's answers are exact here,
# so any difference from exact search is a wrong graph, not approximation.
PARAMS = AnnParams(ef_search=400)


def _points(seed: int, per_collection: int = 200) -> list[StoredChunk]:
    rng = np.random.default_rng(seed)
    out = []
    for collection in COLLECTIONS:
        for i in range(per_collection):
            v = rng.normal(size=DIM).astype(np.float32)
            payload = {"collection": collection, "document_id": f"{seed}-{collection}-{i // 20}"}
            out.append(
                StoredChunk(str(uuid.uuid4()), v.tolist(), SparseVector([1], [1.0]), payload)
            )
    return out


def _settled(store: EdgeStore, timeout_s: float = 60) -> None:
    assert store.ann is not None
    deadline = time.monotonic() + timeout_s
    while store.ann.backlog or not store.ann.status().ready:
        assert time.monotonic() < deadline, "the dense index never caught up"
        time.sleep(0.05)


def _build(path: Path, points: list[StoredChunk]) -> None:
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    store.upsert(points)
    _settled(store)
    store.close()  # drains and saves


@contextmanager
def _reopened_settled(path: Path) -> Iterator[tuple[EdgeStore, AnnStatus]]:
    """The store reopened, once its dense index answers every collection."""
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    try:
        assert store.ann is not None
        _settled(store)
        yield store, store.ann.status()
    finally:
        store.close()


def _assert_like_exact(store: EdgeStore, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(15):
        q = rng.normal(size=DIM).tolist()
        for scope in (COLLECTIONS[:1], COLLECTIONS):
            hnsw = [h.id for h in store.search_dense(q, collections=scope, limit=10)]
            exact = [h.id for h in store.exact_dense(q, collections=scope, limit=10)]
            assert hnsw == exact


def test_a_reopened_store_answers_at_once_from_the_saved_index(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    _build(path, _points(1))
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    try:
        assert store.ann is not None
        status = store.ann.status()
        # Straight after opening: loaded, complete, nothing to re-insert.
        assert (status.origin, status.ready, status.vectors) == ("loaded", True, 400)
        assert store.ann.backlog == 0
        _assert_like_exact(store, 2)
    finally:
        store.close()


def test_writes_the_save_never_saw_are_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "edge"
    first = _points(1)
    _build(path, first)
    # Reopen, write, then "crash": the save on close never happens.
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    added = _points(3, per_collection=30)
    store.upsert(added)
    gone = first[0].payload["document_id"]
    store.delete_document(gone)
    _settled(store)
    with monkeypatch.context() as patch:
        patch.setattr(ann_files, "save", lambda *a, **k: None)
        patch.setattr(ann_files, "mark_clean", lambda *a, **k: None)
        store.close()

    with _reopened_settled(path) as (store, status):
        assert (status.origin, status.ready, status.vectors) == ("loaded", True, 400 + 60 - 20)
        hits = store.search_dense(added[5].dense, collections=COLLECTIONS, limit=3)
        assert hits[0].id == added[5].id
        hits = store.search_dense(first[0].dense, collections=COLLECTIONS, limit=50)
        assert all(h.payload["document_id"] != gone for h in hits)
        _assert_like_exact(store, 4)


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest"])
def test_a_damaged_index_file_is_rebuilt_from_the_store(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "edge"
    _build(path, _points(1))
    folder = path.with_name("edge-dense-index")
    graph = folder / "g0.hnsw"
    data = graph.read_bytes()
    if damage == "truncate":
        graph.write_bytes(data[: len(data) // 2])
    elif damage == "flip":  # same size, one byte changed: only the checksum tells
        graph.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        (folder / "manifest.json").write_text("{not json")
    with _reopened_settled(path) as (store, status):
        assert (status.origin, status.ready, status.vectors) == ("rebuilt", True, 400)
        assert status.reason
        _assert_like_exact(store, 5)
    # The rebuilt index was saved: the next start loads it.
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    try:
        assert store.ann is not None and store.ann.status().origin == "loaded"
    finally:
        store.close()
