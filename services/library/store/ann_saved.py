"""The background dense index, saved to disk and loaded at start instead of rebuilt.

The builder saves when it is idle (at most every ``save_interval_s``) and on
close. A periodic save appends the points added to or removed from the graphs
since the previous save to the delta file (``ann_delta.py``); the whole graphs
are rewritten (``ann_files.py``) on close, after a start that replayed a delta,
and when the delta outgrows ``DELTA_FRACTION`` of the saved vectors.

At start a saved index is loaded and its delta replayed: removals at once,
additions as pending points (scored exactly until the builder inserts them).
If no write reached the store after the save (the ``clean`` marker) the graphs
answer at once; otherwise they are checked against the store page by page —
every collection answered by the store's exact search meanwhile — and only
the points that differ are inserted or removed. A missing, damaged or
mismatched save is rebuilt from the store. :meth:`status` says which happened.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from services.library.store import ann_delta, ann_files
from services.library.store.ann import AnnParams, DenseAnn, Graph, Page, unit_vector
from services.library.store.ann_graph import quantise

log = logging.getLogger(__name__)

# The delta may hold this share of the saved vectors (or DELTA_MIN records)
# before a save rewrites the whole graphs: it bounds the replay at start.
DELTA_FRACTION = 0.2
DELTA_MIN = 2000


class SavedDenseAnn(DenseAnn):
    def __init__(self, dimension: int, params: AnnParams | None, folder: Path) -> None:
        super().__init__(dimension, params)
        self.folder = folder
        self._generation = 0  # writes announced so far
        self._saved_generation = -1  # the generation the saved graphs reflect (-1: none)
        self._clean_on_disk = False  # the clean marker is there
        self._last_save = time.monotonic()
        # Graph changes since the last save: (collection, point id, label or None).
        self._changes: list[tuple[str, str, int | None]] = []
        self._changes_lock = threading.Lock()
        self._delta_records = 0  # records in the delta on disk
        self._saved_vectors = 0  # vectors in the full save on disk
        self._full_due = True  # no full save of this run's graphs (or a delta to fold)
        self.last_save_bytes = 0  # what the last save wrote (the bench and tests read it)

    def start(self, backfill: Callable[[], Iterator[Page]] | None = None) -> None:
        if backfill is None:  # an empty store: nothing to load
            super().start(None)
            return
        try:
            saved = ann_files.load(
                self.folder, self.dimension, self.params.m, self.params.ef_construction
            )
        except ann_files.IndexFileError as exc:
            self._reason = str(exc)
            log.warning("library: dense index rebuilt from the store (%s)", exc)
            super().start(backfill)
            return
        for graph in saved.graphs:
            labels = {pid: label for label, pid in enumerate(graph.ids) if pid}
            _forget_unnamed(graph)
            self._graphs[graph.collection] = Graph(graph.index, list(graph.ids), labels)
        self._replay(saved.delta)
        log.info(
            "library: dense index loaded (%d vectors, %d delta records%s, %s)",
            saved.vectors,
            len(saved.delta),
            ", torn tail dropped" if saved.torn else "",
            "clean" if saved.clean else "checking it against the store",
        )
        with self._lock:
            self._saved_vectors = saved.vectors
            self._full_due = bool(saved.delta) or saved.torn  # fold it; never append after a tear
            self._origin = "loaded"
            # A replayed delta is folded into a full save once it is inserted.
            self._saved_generation = self._generation - (1 if self._full_due else 0)
            self._clean_on_disk = saved.clean
            self._backfilling = not saved.clean
            self._touched = None if saved.clean else set()
        self._launch(None if saved.clean else backfill, self._check_loaded)

    def will_write(self) -> None:
        """Before the store takes a write: the saved graphs stop matching it."""
        with self._lock:
            self._generation += 1
            if self._clean_on_disk:
                ann_files.mark_dirty(self.folder)
                self._clean_on_disk = False

    def add(self, items: list[tuple[str, str, list[float]]]) -> None:
        super().add(items)
        # A save that ran between the store's write and here (after ``will_write``)
        # lacks these points yet may have been marked clean: make it stale again.
        self.will_write()

    def remove(self, items: list[tuple[str, str]]) -> None:
        super().remove(items)
        self.will_write()  # as in ``add``

    def _save_due(self) -> bool:
        due = time.monotonic() - self._last_save >= self.params.save_interval_s
        return due and self._generation != self._saved_generation

    def _journal(self, collection: str, point_id: str, label: int | None) -> None:
        with self._changes_lock:
            if not self._full_due:  # (a full save is next: it holds every change)
                self._changes.append((collection, point_id, label))

    def _replay(self, delta: list[ann_delta.Change]) -> None:
        """Apply a loaded delta in order: removals to the graphs, additions as pending
        points (an int8 vector scaled back is re-quantised to the same bytes)."""
        for change in delta:
            waiting = self._pending.setdefault(change.collection, {})
            if change.vector is not None:
                waiting[change.point_id] = unit_vector(change.vector.astype(np.float32).tolist())
                continue
            waiting.pop(change.point_id, None)
            graph = self._graphs.get(change.collection)
            label = None if graph is None else graph.labels.pop(change.point_id, None)
            if graph is not None and label is not None:
                graph.index.remove(label)

    def _save(self, *, force: bool, due: bool = False) -> None:
        """Save when the graphs changed (and, with ``due``, the interval passed):
        the changes appended to the delta, or the whole graphs (see the module)."""
        with self._lock:
            if self._backfilling or any(self._pending.values()):
                return
            generation = self._generation
            unchanged = generation == self._saved_generation
            graphs = dict(self._graphs)
        fold = self._closing and self._delta_records > 0  # the next start replays nothing
        if (unchanged and not force and not fold) or (due and not self._save_due()):
            return
        with self._changes_lock:
            changes, self._changes = self._changes, []
        limit = max(DELTA_MIN, DELTA_FRACTION * self._saved_vectors)
        if force or self._closing or self._full_due or self._delta_records + len(changes) > limit:
            self._save_full(graphs)
        else:
            records = self._delta_of(graphs, changes)
            self.last_save_bytes = ann_delta.append(self.folder, records)
            self._delta_records += len(records)
        self._last_save = time.monotonic()
        with self._lock:
            self._saved_generation = generation
            if self._generation == generation and not any(self._pending.values()):
                ann_files.mark_clean(self.folder)
                self._clean_on_disk = True

    def _save_full(self, graphs: dict[str, Graph]) -> None:
        with self._changes_lock:
            # Changes from here on may miss the snapshot: journaled for the next delta
            # (one it already holds replays to the same graphs).
            self._full_due = False
            self._changes = []
        snapshot = []
        for collection, graph in graphs.items():
            with graph.lock:
                ids = [pid if graph.labels.get(pid) == n else "" for n, pid in enumerate(graph.ids)]
            # Saved outside the graph's lock: searches go on. A removal racing the
            # save changes the generation, so this save is not marked clean.
            snapshot.append(ann_files.SavedGraph(collection, graph.index, ids))
        ann_files.save(self.folder, self.dimension, self.params.m, snapshot)
        self.last_save_bytes = sum(
            p.stat().st_size for p in self.folder.iterdir() if p.name != ann_files.CLEAN
        )
        self._saved_vectors = sum(sum(1 for i in s.ids if i) for s in snapshot)
        self._delta_records = 0

    @staticmethod
    def _delta_of(
        graphs: dict[str, Graph], changes: list[tuple[str, str, int | None]]
    ) -> list[ann_delta.Change]:
        """The records of ``changes``. An addition whose label is no longer live was
        removed or replaced since, and that later change is journaled after it: skipped."""
        records = []
        for collection, point_id, label in changes:
            if label is None:
                records.append(ann_delta.Change(collection, point_id, None))
                continue
            graph = graphs.get(collection)
            if graph is None:
                continue
            with graph.lock:
                live = graph.labels.get(point_id) == label
                vector = graph.index.get(label) if live else None
            if vector is not None:
                records.append(ann_delta.Change(collection, point_id, vector))
        return records

    def _check_loaded(self, pages: Callable[[], Iterator[Page]]) -> bool:
        """Compare the loaded graphs with the store: insert what is new or changed,
        remove what the store no longer holds (points written meanwhile excepted)."""
        seen: dict[str, str] = {}
        inserted = 0
        for page in pages():
            if self._stopped or self._closing:
                return False
            changed = []
            for point_id, collection, vector in page:
                seen[point_id] = collection
                if not self._holds(collection, point_id, vector):
                    changed.append((point_id, collection, vector))
            self.add(changed)
            inserted += len(changed)
            self._drain()
        with self._lock:
            touched = self._touched or set()
            gone = [
                (point_id, collection)
                for collection, graph in self._graphs.items()
                for point_id in graph.labels
                if seen.get(point_id) != collection and point_id not in touched
            ]
        self.remove(gone)
        log.info("library: dense index checked: %d points new, %d gone", inserted, len(gone))
        return True

    def _holds(self, collection: str, point_id: str, vector: list[float]) -> bool:
        graph = self._graphs.get(collection)
        if graph is None:
            return False
        with graph.lock:
            label = graph.labels.get(point_id)
            held = None if label is None else graph.index.get(label)
        if held is None:
            return False
        # int8 of the stored vector, within one step (float rounding at a .5 edge).
        wanted = quantise(unit_vector(vector))[0].astype(np.int16)
        return bool(np.abs(held.astype(np.int16) - wanted).max() <= 1)


def _forget_unnamed(graph: ann_files.SavedGraph) -> None:
    """A label saved without an id (removed while the save ran) must never answer."""
    for label, point_id in enumerate(graph.ids):
        if not point_id:
            graph.index.remove(label)  # a no-op where the saved graph lacks it
