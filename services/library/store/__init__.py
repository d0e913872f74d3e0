"""Vector stores: one interface, a Qdrant server / client-local engine and a Qdrant Edge engine."""

from services.library.store.base import Hit, StoredChunk, VectorStore
from services.library.store.factory import open_store

__all__ = ["Hit", "StoredChunk", "VectorStore", "open_store"]
