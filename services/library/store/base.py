"""What the library needs from a vector store: upsert, delete, dense and sparse search."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from services.library.lexical import SparseVector

DENSE = "dense"
SPARSE = "bm25"
# Payload kinds that are their own public kind; every other chunk reads as "text".
SPECIAL_KINDS = ("table", "caption")


@dataclass
class StoredChunk:
    id: str  # UUID string
    dense: list[float]
    sparse: SparseVector
    payload: dict[str, Any]


@dataclass
class Hit:
    id: str
    score: float
    payload: dict[str, Any]


class VectorStore(ABC):
    """Chunks of all library collections in one Qdrant collection, filtered by the
    ``collection`` payload field (keyword-indexed), so a search spans every
    collection the caller may read in one query."""

    @abstractmethod
    def ensure(self, dimension: int) -> None:
        """Create the collection and payload indexes if missing."""

    @abstractmethod
    def upsert(self, chunks: list[StoredChunk]) -> None: ...

    @abstractmethod
    def delete_document(self, document_id: str) -> None: ...

    # ``kind`` (text | table | caption, see services/library/kinds.py) narrows a
    # search to chunks of that public kind; ``documents`` to chunks of those
    # documents (services/library/scope.py); None searches every chunk.
    @abstractmethod
    def search_dense(
        self,
        vector: list[float],
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]: ...

    @abstractmethod
    def search_sparse(
        self,
        vector: SparseVector,
        *,
        collections: list[str],
        limit: int,
        kind: str | None = None,
        documents: list[str] | None = None,
    ) -> list[Hit]: ...

    @abstractmethod
    def count(self, *, collections: list[str] | None = None) -> int: ...

    def dense_index_status(self) -> dict[str, Any] | None:
        """The background dense index's state (None: the engine has none)."""
        return None

    def optimize(self) -> None:  # noqa: B027 - optional hook, a no-op for most engines
        """Build indexes after a bulk load (engines that need it override this)."""

    @abstractmethod
    def close(self) -> None: ...
