"""The background dense index, saved to disk and loaded at start instead of rebuilt.

The builder saves the graphs when it is idle (at most every ``save_interval_s``)
and on close (``ann_files.py`` writes them). At start a saved index is loaded:
if no write reached the store after the save (the ``clean`` marker) the graphs
answer at once; otherwise they are checked against the store page by page —
every collection answered by the store's exact search meanwhile — and only
the points that differ are inserted or removed. A missing, damaged or
mismatched save is rebuilt from the store. :meth:`status` says which happened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from services.library.store import ann_files
from services.library.store.ann import AnnParams, DenseAnn, Graph, Page, unit_vector

log = logging.getLogger(__name__)


class SavedDenseAnn(DenseAnn):
    def __init__(self, dimension: int, params: AnnParams | None, folder: Path) -> None:
        super().__init__(dimension, params)
        self.folder = folder
        self._generation = 0  # writes announced so far
        self._saved_generation = -1  # the generation the saved graphs reflect (-1: none)
        self._clean_on_disk = False  # the clean marker is there
        self._last_save = time.monotonic()

    def start(self, backfill: Callable[[], Iterator[Page]] | None = None) -> None:
        if backfill is None:  # an empty store: nothing to load
            super().start(None)
            return
        try:
            saved = ann_files.load(self.folder, self.dimension, self.params.m)
        except ann_files.IndexFileError as exc:
            self._reason = str(exc)
            log.warning("library: dense index rebuilt from the store (%s)", exc)
            super().start(backfill)
            return
        for graph in saved.graphs:
            labels = {pid: label for label, pid in enumerate(graph.ids) if pid}
            _forget_unnamed(graph)
            self._graphs[graph.collection] = Graph(graph.index, list(graph.ids), labels)
        log.info(
            "library: dense index loaded (%d vectors, %s)",
            saved.vectors,
            "clean" if saved.clean else "checking it against the store",
        )
        with self._lock:
            self._origin = "loaded"
            self._saved_generation = self._generation
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

    def _save_due(self) -> bool:
        due = time.monotonic() - self._last_save >= self.params.save_interval_s
        return due and self._generation != self._saved_generation

    def _save(self, *, force: bool, due: bool = False) -> None:
        """Save the graphs when they changed (and, with ``due``, the interval passed)."""
        with self._lock:
            if self._backfilling or any(self._pending.values()):
                return
            generation = self._generation
            unchanged = generation == self._saved_generation
            graphs = list(self._graphs.items())
        if (unchanged and not force) or (due and not self._save_due()):
            return
        snapshot = []
        for collection, graph in graphs:
            with graph.lock:
                ids = [pid if graph.labels.get(pid) == n else "" for n, pid in enumerate(graph.ids)]
            # Saved outside the graph's lock: searches go on. A removal racing the
            # save changes the generation, so this save is not marked clean.
            snapshot.append(ann_files.SavedGraph(collection, graph.index, ids))
        ann_files.save(self.folder, self.dimension, self.params.m, snapshot)
        self._last_save = time.monotonic()
        with self._lock:
            self._saved_generation = generation
            if self._generation == generation and not any(self._pending.values()):
                ann_files.mark_clean(self.folder)
                self._clean_on_disk = True

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
            if label is None:
                return False
            held = np.asarray(graph.index.get_items([label]), dtype=np.float32)[0]
        return bool(np.allclose(held, unit_vector(vector), atol=1e-4))


def _forget_unnamed(graph: ann_files.SavedGraph) -> None:
    """A label saved without an id (removed while the save ran) must never answer."""
    for label, point_id in enumerate(graph.ids):
        if not point_id:
            try:
                graph.index.mark_deleted(label)
            except RuntimeError:  # already marked in the saved graph
                pass
