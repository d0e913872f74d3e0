"""Qdrant through qdrant-client: a Qdrant server (deployment) or its local-path mode."""

from __future__ import annotations

import threading
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from services.library.lexical import SparseVector
from services.library.store.base import (
    DENSE,
    SPARSE,
    SPECIAL_KINDS,
    Hit,
    StoredChunk,
    VectorStore,
)


class ClientStore(VectorStore):
    def __init__(self, client: QdrantClient, collection: str) -> None:
        self.client = client
        self.collection = collection
        self._ready = False
        self._lock = threading.Lock()

    def ensure(self, dimension: int) -> None:
        with self._lock:
            if self._ready:
                return
            if not self.client.collection_exists(self.collection):
                self.client.create_collection(
                    self.collection,
                    vectors_config={
                        DENSE: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)
                    },
                    sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                )
                for field in ("collection", "document_id", "kind"):
                    self.client.create_payload_index(
                        self.collection, field, qm.PayloadSchemaType.KEYWORD
                    )
            self._ready = True

    def upsert(self, chunks: list[StoredChunk]) -> None:
        points = [
            qm.PointStruct(
                id=c.id,
                vector={
                    DENSE: c.dense,
                    SPARSE: qm.SparseVector(indices=c.sparse.indices, values=c.sparse.values),
                },
                payload=c.payload,
            )
            for c in chunks
        ]
        self.client.upsert(self.collection, points, wait=True)

    def delete_document(self, document_id: str) -> None:
        flt = qm.Filter(
            must=[qm.FieldCondition(key="document_id", match=qm.MatchValue(value=document_id))]
        )
        self.client.delete(self.collection, points_selector=qm.FilterSelector(filter=flt))

    @staticmethod
    def _filter(
        collections: list[str], kind: str | None = None, documents: list[str] | None = None
    ) -> qm.Filter:
        must: list[Any] = [
            qm.FieldCondition(key="collection", match=qm.MatchAny(any=list(collections)))
        ]
        if documents is not None:
            must.append(qm.FieldCondition(key="document_id", match=qm.MatchAny(any=documents)))
        must_not: list[Any] = []
        if kind in SPECIAL_KINDS:
            must.append(qm.FieldCondition(key="kind", match=qm.MatchValue(value=kind)))
        elif kind is not None:  # text: everything that is not a table or a caption
            must_not.append(
                qm.FieldCondition(key="kind", match=qm.MatchAny(any=list(SPECIAL_KINDS)))
            )
        return qm.Filter(must=must, must_not=must_not or None)

    def _query(
        self,
        query: Any,
        using: str,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        if not collections or documents == []:
            return []
        result = self.client.query_points(
            self.collection,
            query=query,
            using=using,
            query_filter=self._filter(collections, kind, documents),
            limit=limit,
            with_payload=True,
        )
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in result.points]

    def search_dense(
        self,
        vector: list[float],
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        return self._query(vector, DENSE, collections, limit, kind, documents)

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
        query = qm.SparseVector(indices=vector.indices, values=vector.values)
        return self._query(query, SPARSE, collections, limit, kind, documents)

    def count(self, *, collections: list[str] | None = None) -> int:
        flt = self._filter(collections) if collections else None
        return int(self.client.count(self.collection, count_filter=flt, exact=True).count)

    def close(self) -> None:
        self.client.close()
