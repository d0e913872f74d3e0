"""Searches narrowed inside the store: to one public kind, to a few documents, or both.

A narrowed search filters inside the store (both the dense and the BM25 list),
not after ranking, so ``kind=table`` returns the best tables even when no table
would have made the unfiltered top k, and ``document=<id>`` returns that
document's best passages however many other documents outrank them (the
survey reads a just-fetched paper this way). The retriever is reused as it is:
a shallow copy is handed a store view that adds the filter.
"""

from __future__ import annotations

import copy

from services.library.kinds import KINDS
from services.library.lexical import SparseVector
from services.library.retrieval import Retriever
from services.library.store.base import Hit, StoredChunk, VectorStore


class ScopedStore(VectorStore):
    """A read view of ``inner`` whose searches return only chunks of one public
    kind and/or of the given documents."""

    def __init__(
        self, inner: VectorStore, kind: str | None = None, documents: list[str] | None = None
    ) -> None:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        self.inner = inner
        self.kind = kind
        self.documents = documents

    def ensure(self, dimension: int) -> None:
        self.inner.ensure(dimension)

    def upsert(self, chunks: list[StoredChunk]) -> None:
        raise RuntimeError("a scoped store is read-only")

    def delete_document(self, document_id: str) -> None:
        raise RuntimeError("a scoped store is read-only")

    def _narrowed(
        self, kind: str | None, documents: list[str] | None
    ) -> tuple[str | None, list[str] | None] | None:
        """The scope of a search asked through this view (None: nothing can match)."""
        if kind is not None and self.kind is not None and kind != self.kind:
            return None  # two different kinds asked at once: nothing is both
        wanted = self.documents
        if documents is not None:
            wanted = documents if wanted is None else [d for d in documents if d in wanted]
        return (kind or self.kind, wanted)

    def search_dense(
        self,
        vector: list[float],
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        scope = self._narrowed(kind, documents)
        if scope is None:
            return []
        return self.inner.search_dense(
            vector, collections=collections, limit=limit, kind=scope[0], documents=scope[1]
        )

    def search_sparse(
        self,
        vector: SparseVector,
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]:
        scope = self._narrowed(kind, documents)
        if scope is None:
            return []
        return self.inner.search_sparse(
            vector, collections=collections, limit=limit, kind=scope[0], documents=scope[1]
        )

    def count(self, *, collections: list[str] | None = None) -> int:
        return self.inner.count(collections=collections)

    def close(self) -> None:  # the view owns nothing
        return None


def scoped_retriever(
    retriever: Retriever, kind: str | None = None, documents: list[str] | None = None
) -> Retriever:
    """``retriever`` itself, or a copy searching only chunks of ``kind`` / ``documents``."""
    if kind is None and documents is None:
        return retriever
    scoped = copy.copy(retriever)
    scoped.store = ScopedStore(retriever.store, kind, documents)
    return scoped
