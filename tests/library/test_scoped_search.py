"""A project-scoped search never returns another project's chunks on the hnsw
path, even when k is larger than the project's share of the store and every
other project's chunk is nearer to the query; the store keeps its keyword
payload indexes on ``collection`` and ``document_id``."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from services.library.lexical import SparseVector
from services.library.store.ann import AnnParams, DenseAnn
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

DIM = 16
SMALL, BIG = "project:small", "project:big"


def _chunks(rng: np.random.Generator, query: np.ndarray) -> list[StoredChunk]:
    """15 chunks in the small project far from the query, 1,500 in the big one near it."""
    out = []
    for collection, count, spread in ((SMALL, 15, 1.0), (BIG, 1500, 0.05)):
        for i in range(count):
            v = (query if collection == BIG else -query) + rng.normal(0, spread, DIM)
            payload = {"collection": collection, "document_id": f"{collection}-{i // 5}"}
            sparse = SparseVector([7], [1.0])
            out.append(
                StoredChunk(str(uuid.uuid4()), v.astype(np.float32).tolist(), sparse, payload)
            )
    return out


def _settled(store: EdgeStore) -> None:
    assert store.ann is not None
    deadline = time.monotonic() + 60
    while store.ann.backlog or not store.ann.status().ready:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _assert_scoped(store: EdgeStore, query: np.ndarray, small_ids: set[str]) -> None:
    dense = store.search_dense(query.tolist(), collections=[SMALL], limit=50)
    assert {h.id for h in dense} == small_ids  # all 15, and nothing else
    assert {h.payload["collection"] for h in dense} == {SMALL}
    sparse = store.search_sparse(SparseVector([7], [1.0]), collections=[SMALL], limit=50)
    assert {h.id for h in sparse} == small_ids
    both = store.search_dense(query.tolist(), collections=[SMALL, BIG], limit=10)
    assert {h.payload["collection"] for h in both} == {BIG}  # the nearer ones


def test_scoped_search_on_the_hnsw_path_stays_in_scope(tmp_path: Path) -> None:
    rng = np.random.default_rng(21)
    query = rng.normal(size=DIM)
    query /= np.linalg.norm(query)
    chunks = _chunks(rng, query)
    small_ids = {c.id for c in chunks if c.payload["collection"] == SMALL}
    store = EdgeStore(tmp_path / "edge", AnnParams(ef_search=64))
    store.ensure(DIM)
    try:
        store.upsert(chunks)
        _settled(store)
        _assert_scoped(store, query, small_ids)
        schema = store.shard.info().payload_schema
        for field in ("collection", "document_id"):
            assert schema[field].data_type == qe.PayloadSchemaType.Keyword
    finally:
        store.close()
    # Reopened: answered from the loaded graphs, the same way.
    store = EdgeStore(tmp_path / "edge", AnnParams(ef_search=64))
    store.ensure(DIM)
    try:
        assert store.ann is not None and store.ann.status().origin == "loaded"
        _assert_scoped(store, query, small_ids)
        assert set(store.shard.info().payload_schema) >= {"collection", "document_id"}
    finally:
        store.close()


def test_points_waiting_for_a_graph_are_scoped_too() -> None:
    rng = np.random.default_rng(22)
    query = rng.normal(size=DIM)
    query /= np.linalg.norm(query)
    chunks = _chunks(rng, query)
    ann = DenseAnn(DIM, AnnParams())  # not started: every point waits, scored exactly
    ann.add([(c.id, c.payload["collection"], c.dense) for c in chunks])
    found = ann.search(query.tolist(), collections=[SMALL], limit=50)
    assert {pid for pid, _ in found} == {c.id for c in chunks if c.payload["collection"] == SMALL}
