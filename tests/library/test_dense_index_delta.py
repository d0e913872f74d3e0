"""The dense index's int8 graphs and its delta saves: the store's dense hits carry
exact cosines in exact order (the int8 graph only picks candidates), a periodic
save appends only the changed points (the graph files are not rewritten), the
saved graphs plus their delta load to the same answers, and a torn delta tail is
dropped and checked against the store while a damaged delta is rebuilt."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from services.library.store import ann_delta, ann_files
from services.library.store.ann import AnnParams
from services.library.store.ann_graph import QuantisedGraph, quantise
from services.library.store.edge import EdgeStore
from tests.library.test_dense_index_files import (
    COLLECTIONS,
    DIM,
    _assert_like_exact,
    _points,
    _settled,
)

# Saves as soon as the builder is idle, so a test waits for one, not a minute.
PARAMS = AnnParams(ef_search=400, save_interval_s=0.0)
RECORD_BYTES = 8 + 4 + len("project:a") + 36 + DIM  # frame, header, collection, id, int8 vector


def _open(path: Path) -> EdgeStore:
    store = EdgeStore(path, PARAMS)
    store.ensure(DIM)
    return store


def _wait_clean(folder: Path, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not (folder / "clean").exists():
        assert time.monotonic() < deadline, "no save came"
        time.sleep(0.02)


def _saved_with_delta(path: Path, patch: pytest.MonkeyPatch) -> tuple[list, list, str]:
    """A full save of 400 points, then (a new run) one document deleted and 30
    points added, saved periodically, then a "crash": the full save at close
    never happens, that delta stays on disk. Returns (first points, added
    points, deleted document)."""
    first, added = _points(1), _points(7, per_collection=15)
    store = _open(path)
    store.upsert(first)
    _settled(store)
    store.close()  # the full save
    store = _open(path)
    gone = first[0].payload["document_id"]
    store.delete_document(gone)
    store.upsert(added)
    _settled(store)
    _wait_clean(store.index_folder)
    with patch.context() as crash:
        crash.setattr(ann_files, "save", lambda *a, **k: None)
        store.close()
    return first, added, gone


def test_dense_hits_carry_exact_cosines_in_exact_order(tmp_path: Path) -> None:
    points = _points(2, per_collection=300)
    store = _open(tmp_path / "edge")
    try:
        store.upsert(points)
        _settled(store)
        vectors = {p.id: np.asarray(p.dense) / np.linalg.norm(p.dense) for p in points}
        rng = np.random.default_rng(8)
        for _ in range(10):
            q = rng.normal(size=DIM)
            hits = store.search_dense(q.tolist(), collections=COLLECTIONS, limit=10)
            exact = sorted(vectors, key=lambda i: -float(vectors[i] @ q))[:10]
            assert [h.id for h in hits] == exact
            for h in hits:  # the int8 graph's score would miss by up to ~1e-2
                assert h.score == pytest.approx(
                    float(vectors[h.id] @ q / np.linalg.norm(q)), abs=1e-5
                )
    finally:
        store.close()


def test_int8_vectors_survive_a_replay_bit_for_bit() -> None:
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(50, DIM)).astype(np.float32)
    q = quantise(rows)
    assert np.abs(q).max(axis=1).tolist() == [127] * 50  # each row uses the full range
    back = q.astype(np.float32) / np.linalg.norm(q.astype(np.float32), axis=1, keepdims=True)
    assert np.array_equal(quantise(back), q)
    graph = QuantisedGraph(DIM, 16, 100)
    graph.add(list(range(50)), q)
    held = graph.get(7)
    assert held is not None and np.array_equal(held, q[7])


def test_a_periodic_save_appends_only_the_changed_points(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    store = _open(path)
    store.upsert(_points(1))
    _settled(store)
    store.close()  # the full save: 400 vectors
    folder = path.with_name("edge-dense-index")
    graphs = {p.name: p.stat().st_ino for p in folder.glob("g*")}
    delta_before = (folder / ann_delta.DELTA).stat().st_size
    store = _open(path)
    try:
        store.upsert(_points(5, per_collection=10))  # 20 points
        _settled(store)
        _wait_clean(folder)
        assert store.ann is not None
        written = store.ann.last_save_bytes  # type: ignore[attr-defined]
        assert written == (folder / ann_delta.DELTA).stat().st_size - delta_before
        assert 20 * RECORD_BYTES <= written <= 20 * (RECORD_BYTES + 4)
        assert {p.name: p.stat().st_ino for p in folder.glob("g*")} == graphs  # not rewritten
    finally:
        store.close()


def test_the_saved_graphs_and_their_delta_load_to_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "edge"
    first, added, gone = _saved_with_delta(path, monkeypatch)
    changes, torn = _delta_of(path)
    assert len(changes) == 30 + 20 and not torn  # the store was closed on this delta
    store = _open(path)
    try:
        assert store.ann is not None
        status = store.ann.status()
        assert (status.origin, status.ready) == ("loaded", True)  # clean: answers at once
        assert (
            store.search_dense(added[3].dense, collections=COLLECTIONS, limit=1)[0].id
            == added[3].id
        )
        _settled(store)
        assert store.ann.status().vectors == 400 + 30 - 20
        hits = store.search_dense(first[0].dense, collections=COLLECTIONS, limit=60)
        assert all(h.payload["document_id"] != gone for h in hits)
        _assert_like_exact(store, 6)
    finally:
        store.close()


def test_a_torn_delta_tail_is_dropped_and_checked_against_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "edge"
    _, added, _ = _saved_with_delta(path, monkeypatch)
    delta = path.with_name("edge-dense-index") / ann_delta.DELTA
    delta.write_bytes(delta.read_bytes()[:-5])  # a crash mid-append: the last record short
    assert len(_delta_of(path)[0]) == 49
    store = _open(path)
    try:
        assert store.ann is not None
        status = store.ann.status()
        assert (status.origin, status.ready) == ("loaded", False)  # checked, not trusted
        _settled(store)
        assert store.ann.status().vectors == 410
        last = added[-1]  # its record was the torn one: the check puts it back
        assert store.search_dense(last.dense, collections=COLLECTIONS, limit=1)[0].id == last.id
        _assert_like_exact(store, 7)
    finally:
        store.close()


def test_a_damaged_delta_record_is_rebuilt_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "edge"
    _saved_with_delta(path, monkeypatch)
    delta = path.with_name("edge-dense-index") / ann_delta.DELTA
    data = bytearray(delta.read_bytes())
    data[len(ann_delta.MAGIC) + ann_delta.TOKEN_BYTES + 20] ^= 0xFF  # inside the first record
    delta.write_bytes(bytes(data))
    store = _open(path)
    try:
        assert store.ann is not None
        _settled(store)
        status = store.ann.status()
        assert (status.origin, status.vectors) == ("rebuilt", 410)
        assert status.reason is not None and "checksum" in status.reason
        _assert_like_exact(store, 8)
    finally:
        store.close()


def _delta_of(path: Path) -> tuple[list[ann_delta.Change], bool]:
    import json

    folder = path.with_name("edge-dense-index")
    token = bytes.fromhex(json.loads((folder / "manifest.json").read_text())["token"])
    return ann_delta.read(folder, token, DIM)


def test_a_save_between_the_stores_write_and_the_index_add_is_not_left_clean(
    tmp_path: Path,
) -> None:
    from services.library.store.ann_saved import SavedDenseAnn

    folder = tmp_path / "index"
    ann = SavedDenseAnn(DIM, PARAMS, folder)  # no builder: the save is called by hand
    ann.will_write()  # the store announces a write...
    ann._save(force=False)  # ...a periodic save slips in before the index hears of it...
    assert (folder / "clean").exists()
    ann.add([("p1", "project:a", [1.0] * DIM)])  # ...then the points arrive
    assert not (folder / "clean").exists()  # the save lacks them: not clean
