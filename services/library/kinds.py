"""What a search hit *is* — ``text``, ``table`` or ``caption`` — and searches narrowed to one.

The store's payload ``kind`` is the chunker's finer kind (``text``,
``environment``, ``reference``, ``caption``, ``table``; chunks indexed before
this field was written carry ``para``, and some none). The public kind folds
it: ``table`` and ``caption`` are themselves, everything else — a missing
kind included — reads as ``text``.

A narrowed search filters inside the store (both the dense and the BM25 list),
not after ranking, so ``kind=table`` returns the best tables even when no table
would have made the unfiltered top k. The retriever is reused as it is: a
shallow copy is handed a store view that adds the filter.
"""

from __future__ import annotations

import copy
from typing import Any

from services.library.lexical import SparseVector
from services.library.retrieval import Retriever
from services.library.store.base import SPECIAL_KINDS, Hit, StoredChunk, VectorStore

KINDS: tuple[str, ...] = ("text", "table", "caption")


def public_kind(payload_kind: Any) -> str:
    """The public kind of a stored chunk's payload ``kind``."""
    return str(payload_kind) if payload_kind in SPECIAL_KINDS else "text"


def matches(payload: dict[str, Any], kind: str) -> bool:
    return public_kind(payload.get("kind")) == kind


class KindScopedStore(VectorStore):
    """A read view of ``inner`` whose searches return only chunks of one public kind."""

    def __init__(self, inner: VectorStore, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        self.inner = inner
        self.kind = kind

    def ensure(self, dimension: int) -> None:
        self.inner.ensure(dimension)

    def upsert(self, chunks: list[StoredChunk]) -> None:
        raise RuntimeError("a kind-scoped store is read-only")

    def delete_document(self, document_id: str) -> None:
        raise RuntimeError("a kind-scoped store is read-only")

    def search_dense(
        self, vector: list[float], *, collections: list[str], limit: int, kind: str | None = None
    ) -> list[Hit]:
        if kind not in (None, self.kind):
            return []  # two different kinds asked at once: nothing is both
        return self.inner.search_dense(vector, collections=collections, limit=limit, kind=self.kind)

    def search_sparse(
        self, vector: SparseVector, *, collections: list[str], limit: int, kind: str | None = None
    ) -> list[Hit]:
        if kind not in (None, self.kind):
            return []
        return self.inner.search_sparse(
            vector, collections=collections, limit=limit, kind=self.kind
        )

    def count(self, *, collections: list[str] | None = None) -> int:
        return self.inner.count(collections=collections)

    def close(self) -> None:  # the view owns nothing
        return None


def scoped_retriever(retriever: Retriever, kind: str | None) -> Retriever:
    """``retriever`` itself, or a copy searching only chunks of ``kind``."""
    if kind is None:
        return retriever
    scoped = copy.copy(retriever)
    scoped.store = KindScopedStore(retriever.store, kind)
    return scoped
