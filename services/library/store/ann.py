"""A dense-vector HNSW index per library collection, built in the background.

Why not Qdrant Edge's own HNSW: ``EdgeShard.optimize()`` builds it while holding
Python's GIL — the whole library process (HTTP, ingestion) stops for minutes at
a million chunks (measured: 11 min). The graphs (``ann_graph.py``: int8
vectors, usearch) release the GIL while they insert, so a builder thread grows
them while searches and ingestion go on. Graph scores are approximate (int8);
the store rescores the candidates from its full vectors.

One graph per collection (``user:<id>``, ``project:<id>``): a search scoped to
some collections walks only their graphs, with no filter, and the results are
merged by cosine score. Points stored but not yet in a graph wait in
``pending`` and are scored exactly (numpy) at search time, so a search never
misses a stored chunk. While the graphs are still being filled from an
existing store (``backfill`` after a restart) or checked against it, every
collection is reported by :meth:`plan`, and the store answers it by its own
exact filtered search until they are complete.

The graphs live in memory; ``ann_saved.py`` saves and loads them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from services.library.store.ann_graph import QuantisedGraph

log = logging.getLogger(__name__)

# Items inserted per locked step: a search of the same collection waits at most one step.
STEP = 32
# Stored points waiting for a graph are scored exactly on every search; past this
# many, ``add`` waits for the builder (bulk loads go at the builder's pace, and a
# search's exact part stays small). Real ingestion (embedding-bound) never gets here.
MAX_BACKLOG = 5000

# (point id, collection, vector) pages, read from the store after a restart.
Page = list[tuple[str, str, list[float]]]


@dataclass(frozen=True)
class AnnParams:
    m: int = 16
    ef_construction: int = 100
    ef_search: int = 256  # raised to the number asked for when that is larger
    threads: int = 1  # insert threads: the builder shares the CPU with ingestion
    save_interval_s: float = 60.0  # the builder saves the graphs at most this often


@dataclass
class Graph:
    index: QuantisedGraph
    ids: list[str] = field(default_factory=list)  # label -> point id
    labels: dict[str, int] = field(default_factory=dict)  # live point id -> label
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class AnnStatus:
    origin: str  # "new" (empty store), "loaded" (from disk) or "rebuilt" (from the store)
    ready: bool  # the graphs answer every collection (not filling or checking)
    vectors: int  # points in graphs or waiting for one
    reason: str | None = None  # why a saved index was not used


class DenseAnn:
    def __init__(self, dimension: int, params: AnnParams | None = None) -> None:
        self.dimension = dimension
        self.params = params or AnnParams()
        self._origin = "new"
        self._reason: str | None = None
        self._touched: set[str] | None = None  # ids written while the loaded graphs are checked
        self._closing = False
        self._graphs: dict[str, Graph] = {}
        # collection -> point id -> unit vector, stored but not yet in a graph
        self._pending: dict[str, dict[str, np.ndarray]] = {}
        self._lock = threading.Lock()  # guards _graphs, _pending, _backfilling
        self._wake = threading.Condition(self._lock)
        self._backfilling = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    # -- writers -------------------------------------------------------------

    def start(self, backfill: Callable[[], Iterator[Page]] | None = None) -> None:
        """Start the builder; ``backfill`` yields the pages already in the store
        (None: the store is empty)."""
        with self._lock:
            self._backfilling = backfill is not None
            if backfill is not None:
                self._origin = "rebuilt"
        self._launch(backfill, self._backfill)

    def _launch(
        self,
        pages: Callable[[], Iterator[Page]] | None,
        fill: Callable[[Callable[[], Iterator[Page]]], bool],
    ) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(pages, fill), name="library-ann", daemon=True
        )
        self._thread.start()

    def will_write(self) -> None:
        """Called before the store takes a write (persistence keeps track)."""

    def _save(self, *, force: bool, due: bool = False) -> None:
        """Save the graphs (persistence does; here nothing is saved)."""

    def _save_due(self) -> bool:
        return False

    def add(self, items: list[tuple[str, str, list[float]]]) -> None:
        """Points just stored: searchable at once (exactly), in a graph soon."""
        with self._wake:
            builder = threading.current_thread() is self._thread
            while not builder and not self._stopped and self._backlog() > MAX_BACKLOG:
                self._wake.wait(timeout=1.0)
            if self._stopped:  # closed, or the builder failed: the store searches exactly
                return
            for point_id, collection, vector in items:
                self._pending.setdefault(collection, {})[point_id] = unit_vector(vector)
            if self._touched is not None and not builder:
                self._touched.update(point_id for point_id, _, _ in items)
            self._wake.notify_all()

    def remove(self, items: list[tuple[str, str]]) -> None:
        """Points deleted from the store: ``(point id, collection)``."""
        with self._lock:
            if self._touched is not None and threading.current_thread() is not self._thread:
                self._touched.update(point_id for point_id, _ in items)
            for point_id, collection in items:
                self._pending.get(collection, {}).pop(point_id, None)
                graph = self._graphs.get(collection)
                if graph is None:
                    continue
                with graph.lock:
                    label = graph.labels.pop(point_id, None)
                    if label is not None:
                        graph.index.remove(label)
                        self._journal(collection, point_id, None)

    def close(self) -> None:
        """Stop the builder; it first drains what waits and saves the graphs."""
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=120)
        with self._wake:
            self._stopped = True
            self._wake.notify_all()

    def status(self) -> AnnStatus:
        with self._lock:
            vectors = self._backlog() + sum(len(g.labels) for g in self._graphs.values())
            ready = not self._backfilling
            return AnnStatus(self._origin, ready, vectors, self._reason)

    # -- readers -------------------------------------------------------------

    def plan(self, collections: list[str]) -> list[str]:
        """Collections this index cannot answer yet (still filling after a restart)."""
        with self._lock:
            return list(collections) if self._backfilling else []

    @property
    def backlog(self) -> int:
        """Points stored but not yet in a graph."""
        with self._lock:
            return self._backlog()

    def _backlog(self) -> int:
        return sum(len(p) for p in self._pending.values())

    def search(
        self, vector: list[float], *, collections: list[str], limit: int
    ) -> list[tuple[str, float]]:
        """``(point id, cosine)`` best first, over the graphs and pending points."""
        query = unit_vector(vector)
        found: list[tuple[str, float]] = []
        with self._lock:
            graphs = [self._graphs[c] for c in collections if c in self._graphs]
            waiting = [p for c in collections if (p := self._pending.get(c))]
            pending = [(i, v) for p in waiting for i, v in p.items()]
        for graph in graphs:
            found.extend(self._graph_search(graph, query, limit))
        if pending:
            matrix = np.stack([v for _, v in pending])
            scores = matrix @ query
            for row in np.argsort(-scores)[:limit]:
                found.append((pending[row][0], float(scores[row])))
        found.sort(key=lambda kv: kv[1], reverse=True)
        if not pending:
            return found[:limit]
        seen: set[str] = set()  # a point both pending and in a graph counts once
        unique = []
        for point_id, score in found:
            if point_id not in seen:
                seen.add(point_id)
                unique.append((point_id, score))
        return unique[:limit]

    def _graph_search(self, graph: Graph, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        with graph.lock:
            live = len(graph.labels)
            if live == 0:
                return []
            k = min(limit, live)
            found = graph.index.search(query, k, max(self.params.ef_search, k))
            ids = graph.ids
            return [(ids[label], score) for label, score in found]

    # -- the builder thread ----------------------------------------------------

    def _run(
        self,
        pages: Callable[[], Iterator[Page]] | None,
        fill: Callable[[Callable[[], Iterator[Page]]], bool],
    ) -> None:
        try:
            if self._backfilling and pages is not None:
                if not fill(pages):
                    return  # closed before the graphs were complete: nothing saved
                with self._lock:
                    self._backfilling = False
                    self._touched = None
                self._save(force=True)
            while True:
                with self._wake:
                    while not self._busy():
                        self._wake.wait(timeout=5.0)
                    if self._stopped:
                        return
                self._drain()
                if self._closing:
                    self._save(force=False)
                    return
                self._save(force=False, due=True)
        except Exception:  # the store's exact search still answers every query
            log.exception("library: dense index builder stopped")
            with self._wake:
                self._backfilling = True  # every collection: the store's exact search
                self._stopped = True
                self._pending.clear()
                self._wake.notify_all()

    def _busy(self) -> bool:
        """Something for the builder: points waiting, a save due, or the end."""
        if self._stopped or self._closing or any(self._pending.values()):
            return True
        return self._save_due()

    def _backfill(self, pages: Callable[[], Iterator[Page]]) -> bool:
        loaded = 0
        for page in pages():
            if self._stopped or self._closing:
                return False
            self.add(page)
            loaded += len(page)
            self._drain()
        log.info("library: dense index holds the %d stored chunks", loaded)
        return True

    def _drain(self) -> None:
        """Move pending points into their graphs, one locked step at a time."""
        while not self._stopped:
            with self._lock:
                collection = next((c for c, p in self._pending.items() if p), None)
                if collection is None:
                    return
                batch = list(self._pending[collection].items())[:STEP]
                graph = self._graphs.get(collection)
                if graph is None:
                    graph = self._graphs[collection] = self._new_graph()
            self._insert(collection, graph, batch)
            with self._lock:
                waiting = self._pending.get(collection, {})
                for point_id, vector in batch:
                    now = waiting.get(point_id)
                    if now is vector:
                        del waiting[point_id]
                    elif now is None:  # removed while it was being inserted
                        with graph.lock:
                            label = graph.labels.pop(point_id, None)
                            if label is not None:
                                graph.index.remove(label)
                                self._journal(collection, point_id, None)
                    # else re-stored meanwhile: the next step replaces it
                self._wake.notify_all()  # writers waiting on the backlog

    def _insert(self, collection: str, graph: Graph, batch: list[tuple[str, np.ndarray]]) -> None:
        with graph.lock:
            index = graph.index
            labels = []
            for point_id, _ in batch:
                old = graph.labels.get(point_id)
                if old is not None:  # re-stored: the old vector leaves the graph
                    index.remove(old)
                labels.append(len(graph.ids))
                graph.labels[point_id] = len(graph.ids)
                graph.ids.append(point_id)
            # The GIL is released inside: searches and ingestion run meanwhile.
            index.add(labels, np.stack([v for _, v in batch]), self.params.threads)
            for point_id, label in zip((p for p, _ in batch), labels, strict=True):
                self._journal(collection, point_id, label)

    def _journal(self, collection: str, point_id: str, label: int | None) -> None:
        """A graph change (``label`` None: the point left the graph), called under
        the graph's lock: persistence records it for the next delta save."""

    def _new_graph(self) -> Graph:
        return Graph(QuantisedGraph(self.dimension, self.params.m, self.params.ef_construction))


def unit_vector(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
