"""Qdrant Edge: Qdrant's own engine in-process, for the embedded (local path) setup.

qdrant-client's local mode is pure Python and takes seconds per query past
~20k points; Edge answers the same queries in milliseconds (see bench).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from services.library.lexical import SparseVector
from services.library.store.base import DENSE, SPARSE, Hit, StoredChunk, VectorStore


class EdgeStore(VectorStore):
    def __init__(self, path: Path) -> None:
        self.path = path
        self._shard: Any = None
        # Edge shards are not documented as thread-safe for writes; searches and
        # writes from the consumer and request threads are serialised.
        self._lock = threading.RLock()

    def ensure(self, dimension: int) -> None:
        with self._lock:
            if self._shard is not None:
                return
            config = qe.EdgeConfig(
                vectors={DENSE: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)},
                sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            )
            if self.path.exists() and any(self.path.iterdir()):
                self._shard = qe.EdgeShard.load(str(self.path))
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(self.path), config)
                for field in ("collection", "document_id"):
                    self._shard.update(
                        qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword)
                    )

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
        with self._lock:
            self.shard.update(qe.UpdateOperation.upsert_points(points))
            self.shard.flush()

    def delete_document(self, document_id: str) -> None:
        flt = qe.Filter(
            must=[qe.FieldCondition(key="document_id", match=qe.MatchValue(document_id))]
        )
        with self._lock:
            self.shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            self.shard.flush()

    @staticmethod
    def _filter(collections: list[str]) -> Any:
        return qe.Filter(
            must=[qe.FieldCondition(key="collection", match=qe.MatchAny(any=list(collections)))]
        )

    def _query(self, query: Any, collections: list[str], limit: int) -> list[Hit]:
        if not collections:
            return []
        request = qe.QueryRequest(
            limit=limit, query=query, filter=self._filter(collections), with_payload=True
        )
        with self._lock:
            points = self.shard.query(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]

    def search_dense(self, vector: list[float], *, collections: list[str], limit: int) -> list[Hit]:
        return self._query(qe.Query.Nearest(vector, using=DENSE), collections, limit)

    def search_sparse(
        self, vector: SparseVector, *, collections: list[str], limit: int
    ) -> list[Hit]:
        if not vector.indices:
            return []
        sparse = qe.SparseVector(indices=vector.indices, values=vector.values)
        return self._query(qe.Query.Nearest(sparse, using=SPARSE), collections, limit)

    def count(self, *, collections: list[str] | None = None) -> int:
        request = qe.CountRequest(
            exact=True, filter=self._filter(collections) if collections else None
        )
        with self._lock:
            return int(self.shard.count(request))

    def optimize(self) -> None:
        with self._lock:
            self.shard.optimize()

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.close()
                self._shard = None
