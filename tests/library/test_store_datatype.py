"""The embedded store's dense vectors kept as float16 (the service's default since
2026-12-07): dense hits are the exact order of the stored float16 vectors with
cosines within 1e-3 of the float32 ones, a store keeps the datatype it was
created with whatever the setting says later, and a float16 store's saved dense
index is checked against it after a crash without re-inserting the points it
already holds."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from services.library.store import ann_files
from services.library.store.edge import EdgeStore
from tests.library.test_dense_index_files import COLLECTIONS, DIM, PARAMS, _points, _settled


def _open(path: Path, datatype: str) -> EdgeStore:
    store = EdgeStore(path, PARAMS, dense_datatype=datatype)
    store.ensure(DIM)
    return store


def _score_errors(store: EdgeStore, points: list, seed: int) -> list[float]:
    """|score - float32 cosine| of the dense hits of 10 queries, each query's hits
    checked to come in the store's exact order."""
    vectors = {p.id: np.asarray(p.dense) / np.linalg.norm(p.dense) for p in points}
    rng = np.random.default_rng(seed)
    errors = []
    for _ in range(10):
        q = rng.normal(size=DIM)
        hits = store.search_dense(q.tolist(), collections=COLLECTIONS, limit=10)
        exact = store.exact_dense(q.tolist(), collections=COLLECTIONS, limit=10)
        assert [h.id for h in hits] == [h.id for h in exact]
        errors += [abs(h.score - float(vectors[h.id] @ q / np.linalg.norm(q))) for h in hits]
    return errors


def test_float16_hits_are_exact_over_the_stored_vectors_within_1e3(tmp_path: Path) -> None:
    points = _points(2, per_collection=300)
    store = _open(tmp_path / "edge", "float16")
    try:
        store.upsert(points)
        _settled(store)
        errors = _score_errors(store, points, seed=8)
    finally:
        store.close()
    assert max(errors) < 1e-3
    assert max(errors) > 1e-6  # the vectors really are float16 (float32: ~1e-7)


@pytest.mark.parametrize(("created", "later"), [("float32", "float16"), ("float16", "float32")])
def test_a_store_keeps_the_datatype_it_was_created_with(
    tmp_path: Path, created: str, later: str
) -> None:
    points = _points(3)
    store = _open(tmp_path / "edge", created)
    store.upsert(points)
    _settled(store)
    store.close()
    reopened = _open(tmp_path / "edge", later)
    try:
        _settled(reopened)
        assert reopened.count(collections=COLLECTIONS) == len(points)
        worst = max(_score_errors(reopened, points, seed=9))
    finally:
        reopened.close()
    assert (worst < 1e-6) if created == "float32" else (1e-6 < worst < 1e-3)


def test_a_crashed_float16_store_is_checked_without_reinserting_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "edge"
    first, added = _points(4), _points(5, per_collection=15)
    store = _open(path, "float16")
    store.upsert(first)
    _settled(store)
    store.close()  # the full save, clean
    store = _open(path, "float16")
    store.upsert(added)  # the save is no longer clean
    _settled(store)
    with monkeypatch.context() as crash:
        crash.setattr(ann_files, "save", lambda *a, **k: None)
        crash.setattr(ann_files, "mark_clean", lambda *a, **k: None)
        store.close()
    caplog.set_level(logging.INFO, logger="services.library.store.ann_saved")
    store = _open(path, "float16")
    try:
        _settled(store)
        # The float16 vectors read back quantise to what the graphs hold (within
        # one int8 step): only the points the save never saw are inserted.
        assert f"checked: {len(added)} points new, 0 gone" in caplog.text
        _score_errors(store, first + added, seed=10)
    finally:
        store.close()
