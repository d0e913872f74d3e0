"""The background dense index on the embedded store (Qdrant Edge + hnswlib graphs):
scoped searches agree with exact search, fresh points are found before the
builder reaches them, deleted documents never come back, and a reopened store
answers exactly while it refills its graphs, then from them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from services.library.lexical import SparseVector
from services.library.store.ann import AnnParams, DenseAnn
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

DIM = 32
COLLECTIONS = ["project:a", "project:b", "user:c"]
PER_COLLECTION = 1500


def _points(rng: np.random.Generator) -> list[StoredChunk]:
    out = []
    for c, collection in enumerate(COLLECTIONS):
        for i in range(PER_COLLECTION):
            v = rng.normal(size=DIM).astype(np.float32)
            v /= np.linalg.norm(v)
            payload = {"collection": collection, "document_id": f"{c}-{i // 50}", "ordinal": i}
            out.append(
                StoredChunk(str(uuid.uuid4()), v.tolist(), SparseVector([1], [1.0]), payload)
            )
    return out


def _settled(store: EdgeStore, timeout_s: float = 120) -> None:
    assert store.ann is not None
    deadline = time.monotonic() + timeout_s
    while store.ann.backlog or store.ann.plan(COLLECTIONS):
        assert time.monotonic() < deadline, "the dense index never caught up"
        time.sleep(0.1)


def _exact(points: list[StoredChunk], query: np.ndarray, scope: list[str], k: int) -> list[str]:
    chosen = [p for p in points if p.payload["collection"] in scope]
    scores = np.asarray([p.dense for p in chosen]) @ query
    return [chosen[i].id for i in np.argsort(-scores)[:k]]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[StoredChunk]]]:
    path = tmp_path_factory.mktemp("dense") / "edge"
    points = _points(np.random.default_rng(3))
    store = EdgeStore(path, AnnParams(ef_search=64))
    store.ensure(DIM)
    for start in range(0, len(points), 500):
        store.upsert(points[start : start + 500])
    _settled(store)
    store.close()
    yield path, points


@pytest.fixture
def reopened(loaded: tuple[Path, list[StoredChunk]]) -> Iterator[EdgeStore]:
    store = EdgeStore(loaded[0], AnnParams(ef_search=64))
    store.ensure(DIM)
    try:
        yield store
    finally:
        store.close()


def test_scoped_search_agrees_with_exact_search(
    loaded: tuple[Path, list[StoredChunk]], reopened: EdgeStore
) -> None:
    points, store = loaded[1], reopened
    _settled(store)
    rng = np.random.default_rng(11)
    scope = COLLECTIONS[:2]
    overlap = []
    for _ in range(20):
        q = rng.normal(size=DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        hits = store.search_dense(q.tolist(), collections=scope, limit=10)
        assert len(hits) == 10
        assert {h.payload["collection"] for h in hits} <= set(scope)
        assert all("ordinal" in h.payload for h in hits)  # payloads come from the store
        overlap.append(len({h.id for h in hits} & set(_exact(points, q, scope, 10))) / 10)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert np.mean(overlap) >= 0.95


def test_reopened_store_answers_exactly_until_its_graphs_are_refilled(
    loaded: tuple[Path, list[StoredChunk]], reopened: EdgeStore
) -> None:
    points, store = loaded[1], reopened
    assert store.ann is not None
    q = np.asarray(points[7].dense, dtype=np.float32)
    # Right after opening, the graphs are empty: every collection goes to exact search.
    early = store.search_dense(q.tolist(), collections=["project:a"], limit=5)
    assert early[0].id == points[7].id
    _settled(store)
    assert store.ann.plan(COLLECTIONS) == []
    late = store.search_dense(q.tolist(), collections=["project:a"], limit=5)
    assert late[0].id == points[7].id
    assert store.search_dense(q.tolist(), collections=["project:b"], limit=5)[0].id != points[7].id


def test_fresh_points_are_found_before_the_builder_reaches_them() -> None:
    ann = DenseAnn(DIM, AnnParams())  # not started: everything stays pending
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(50, DIM)).astype(np.float32)
    ann.add([(f"p{i}", "project:a", vectors[i].tolist()) for i in range(50)])
    assert ann.backlog == 50
    top = ann.search(vectors[17].tolist(), collections=["project:a"], limit=3)
    assert top[0][0] == "p17" and top[0][1] == pytest.approx(1.0, abs=1e-5)
    assert ann.search(vectors[17].tolist(), collections=["project:b"], limit=3) == []
    ann.start()
    deadline = time.monotonic() + 60
    while ann.backlog:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert ann.search(vectors[17].tolist(), collections=["project:a"], limit=3)[0][0] == "p17"
    ann.close()


def test_a_deleted_document_never_comes_back(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "edge", AnnParams(ef_search=64))
    store.ensure(DIM)
    try:
        _delete_and_restore(store)
    finally:
        store.close()


def _delete_and_restore(store: EdgeStore) -> None:
    points = _points(np.random.default_rng(9))[:600]  # project:a, documents 0-0 … 0-11
    store.upsert(points)
    _settled(store)
    gone = [p for p in points if p.payload["document_id"] == "0-3"]
    store.delete_document("0-3")
    for p in gone[:10]:
        hits = store.search_dense(p.dense, collections=["project:a"], limit=20)
        assert hits and all(h.payload["document_id"] != "0-3" for h in hits)
    # Stored again (a re-ingest): found again, once.
    store.upsert(gone)
    hits = store.search_dense(gone[0].dense, collections=["project:a"], limit=5)
    assert hits[0].id == gone[0].id
    assert [h.id for h in hits].count(gone[0].id) == 1
