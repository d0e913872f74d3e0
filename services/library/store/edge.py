"""Qdrant Edge: Qdrant's own engine in-process, for the embedded (local path) setup.

qdrant-client's local mode is pure Python and takes seconds per query past
~20k points; Edge answers the same queries in milliseconds (see bench).

Dense search: with ``ann`` parameters (the default, ``LEAFLAB_LIBRARY_DENSE_INDEX=hnsw``)
a per-collection HNSW index over int8 vectors built in the background
(``ann.py``) finds the candidates and Edge supplies their payloads and full
vectors, by which they are rescored exactly (Edge holds the only float copy,
float16 in a store the service creates: half the resident file pages);
Edge's exact filtered search answers while that index is still being filled
after a restart. Edge's own ``optimize()`` is not
called by the service: it holds the GIL for minutes at a million chunks.
The dense index is saved next to the store (``<path>-dense-index``) and
loaded at start instead of being rebuilt (``ann.py``, ``ann_files.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from services.library.lexical import SparseVector
from services.library.store.ann import AnnParams, DenseAnn, Page
from services.library.store.ann_graph import RESCORE_MARGIN
from services.library.store.ann_saved import SavedDenseAnn
from services.library.store.base import (
    DENSE,
    SPARSE,
    SPECIAL_KINDS,
    Hit,
    StoredChunk,
    VectorStore,
)
from services.library.store.page_release import PageRelease

BACKFILL_PAGE = 1000
DATATYPES = {
    "float32": qe.VectorStorageDatatype.Float32,
    "float16": qe.VectorStorageDatatype.Float16,
}


class EdgeStore(VectorStore):
    def __init__(
        self,
        path: Path,
        ann: AnnParams | None = None,
        release_pages_s: float = 0.0,
        *,
        dense_datatype: str = "float32",
        release_page_cache: bool = False,
    ) -> None:
        self.path = path
        # Applies to a store created here; a loaded one keeps the datatype it has
        # (Edge refuses another). float32 here keeps exact cosines for direct users
        # such as tests; the service passes its setting (float16 by default).
        self._dense_datatype = DATATYPES[dense_datatype]
        self._shard: Any = None
        self._ann_params = ann
        self.ann: DenseAnn | None = None
        # Edge shards are not documented as thread-safe for writes; searches and
        # writes from the consumer and request threads are serialised.
        self._lock = threading.RLock()
        # The store's file pages leave the RSS this often (0: never); with
        # ``release_page_cache`` the page cache too, unless searches scan the vectors.
        self._pages = PageRelease(
            path,
            release_pages_s,
            self._lock,
            drop_cache=release_page_cache,
            scanning=self._scanning,
        )

    def ensure(self, dimension: int) -> None:
        with self._lock:
            if self._shard is not None:
                return
            config = qe.EdgeConfig(
                vectors={
                    DENSE: qe.EdgeVectorParams(
                        size=dimension, distance=qe.Distance.Cosine, datatype=self._dense_datatype
                    )
                },
                sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            )
            existing = self.path.exists() and any(self.path.iterdir())
            if existing:
                self._shard = qe.EdgeShard.load(str(self.path))
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(self.path), config)
                for field in ("collection", "document_id", "kind"):
                    self._shard.update(
                        qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword)
                    )
            if self._ann_params is not None:
                self.ann = SavedDenseAnn(dimension, self._ann_params, self.index_folder)
                self.ann.start(self._stored_pages if existing else None)
            self._pages.start()

    def _scanning(self) -> bool:
        """Whether dense searches read every stored vector now (Edge's exact search)."""
        return self.ann is None or not self.ann.status().ready

    @property
    def index_folder(self) -> Path:
        """Where the dense index is saved: next to the store, not inside Edge's folder."""
        return self.path.with_name(self.path.name + "-dense-index")

    def _stored_pages(self) -> Iterator[Page]:
        """Every stored point's collection and dense vector, a page at a time
        (the lock is taken per page, so searches and ingestion interleave)."""
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=BACKFILL_PAGE,
                with_payload=qe.PayloadSelector.Include(["collection"]),
                with_vector=[DENSE],
            )
            with self._lock:
                if self._shard is None:
                    return
                records, offset = self._shard.scroll(request)
            yield [
                (str(r.id), str((r.payload or {}).get("collection")), _dense_of(r.vector))
                for r in records
                if r.vector
            ]
            if offset is None:
                return

    @property
    def shard(self) -> Any:
        if self._shard is None:
            raise RuntimeError("vector store not opened: call ensure() first")
        return self._shard

    def upsert(self, chunks: list[StoredChunk]) -> None:
        points = [
            qe.Point(
                id=c.id,
                vector={
                    DENSE: c.dense,
                    SPARSE: qe.SparseVector(indices=c.sparse.indices, values=c.sparse.values),
                },
                payload=c.payload,
            )
            for c in chunks
        ]
        if self.ann is not None:
            self.ann.will_write()
        with self._lock:
            self.shard.update(qe.UpdateOperation.upsert_points(points))
            self.shard.flush()
        if self.ann is not None:
            self.ann.add([(c.id, str(c.payload.get("collection")), c.dense) for c in chunks])

    def delete_document(self, document_id: str) -> None:
        flt = qe.Filter(
            must=[qe.FieldCondition(key="document_id", match=qe.MatchValue(document_id))]
        )
        if self.ann is not None:
            self.ann.will_write()
        with self._lock:
            gone = self._points_of(flt) if self.ann is not None else []
            self.shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            self.shard.flush()
        if self.ann is not None:
            self.ann.remove(gone)

    def _points_of(self, flt: Any) -> list[tuple[str, str]]:
        """``(id, collection)`` of the points a filter matches (caller holds the lock)."""
        found: list[tuple[str, str]] = []
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=BACKFILL_PAGE,
                filter=flt,
                with_payload=qe.PayloadSelector.Include(["collection"]),
                with_vector=False,
            )
            records, offset = self.shard.scroll(request)
            found += [(str(r.id), str((r.payload or {}).get("collection"))) for r in records]
            if offset is None:
                return found

    @staticmethod
    def _filter(
        collections: list[str], kind: str | None = None, documents: list[str] | None = None
    ) -> Any:
        must: list[Any] = [
            qe.FieldCondition(key="collection", match=qe.MatchAny(any=list(collections)))
        ]
        if documents is not None:
            must.append(qe.FieldCondition(key="document_id", match=qe.MatchAny(any=documents)))
        if kind in SPECIAL_KINDS:
            must.append(qe.FieldCondition(key="kind", match=qe.MatchValue(kind)))
        elif kind is not None:  # text: whatever is not a table or a caption (or has no kind)
            return qe.Filter(
                must=must,
                must_not=[
                    qe.FieldCondition(key="kind", match=qe.MatchAny(any=list(SPECIAL_KINDS)))
                ],
            )
        return qe.Filter(must=must)

    def _query(
        self,
        query: Any,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        if not collections or documents == []:
            return []
        flt = self._filter(collections, kind, documents)
        request = qe.QueryRequest(limit=limit, query=query, filter=flt, with_payload=True)
        with self._lock:
            points = self.shard.query(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]

    def exact_dense(
        self,
        vector: list[float],
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        """Edge's exact filtered search (the fallback, and the bench's baseline)."""
        nearest = qe.Query.Nearest(vector, using=DENSE)
        return self._query(nearest, collections, limit, kind, documents)

    def search_dense(
        self,
        vector: list[float],
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        if self.ann is None or kind in SPECIAL_KINDS or documents is not None:
            # Tables, captions and a few named documents are a small share of the
            # chunks: Edge's exact search over the indexed subset beats an HNSW pass
            # filtered afterwards.
            return self.exact_dense(
                vector, collections=collections, limit=limit, kind=kind, documents=documents
            )
        exact = self.ann.plan(collections)
        indexed = [c for c in collections if c not in exact]
        # Text is nearly every chunk: the graph's list, tables and captions dropped,
        # over-fetched by the share they could take.
        fetch = limit if kind is None else limit + limit // 4 + 10
        scored = (
            self.ann.search(vector, collections=indexed, limit=fetch + RESCORE_MARGIN)
            if indexed
            else []
        )
        hits = self._rescored(vector, scored)
        if kind is not None:
            hits = [h for h in hits if h.payload.get("kind") not in SPECIAL_KINDS]
        if exact:
            hits += self.exact_dense(vector, collections=exact, limit=limit, kind=kind)
            hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:limit]

    def _rescored(self, vector: list[float], scored: list[tuple[str, float]]) -> list[Hit]:
        """The index's candidates with their payloads, scored exactly by Edge (its
        cosine over the stored vectors, the same as its exact search), best first:
        the graphs' int8 scores only chose them. One native call: reading the
        vectors back into Python and scoring them here cost several ms a query."""
        if not scored:
            return []
        flt = qe.Filter(must=[qe.HasIdCondition({i for i, _ in scored})])
        nearest = qe.Query.Nearest(vector, using=DENSE)
        request = qe.QueryRequest(limit=len(scored), query=nearest, filter=flt, with_payload=True)
        with self._lock:
            points = self.shard.query(request)
        # A point deleted since the index answered is not found: dropped.
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]

    def search_sparse(
        self,
        vector: SparseVector,
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        if not vector.indices:
            return []
        sparse = qe.Query.Nearest(
            qe.SparseVector(indices=vector.indices, values=vector.values), using=SPARSE
        )
        return self._query(sparse, collections, limit, kind, documents)

    def count(self, *, collections: list[str] | None = None) -> int:
        request = qe.CountRequest(
            exact=True, filter=self._filter(collections) if collections else None
        )
        with self._lock:
            return int(self.shard.count(request))

    def dense_index_status(self) -> dict[str, Any] | None:
        return None if self.ann is None else asdict(self.ann.status())

    def optimize(self) -> None:
        with self._lock:
            self.shard.optimize()

    def close(self) -> None:
        self._pages.stop()
        if self.ann is not None:
            self.ann.close()
        with self._lock:
            if self._shard is not None:
                self._shard.close()
                self._shard = None


def _dense_of(vector: Any) -> list[float]:
    return list(vector[DENSE] if isinstance(vector, dict) else vector)
