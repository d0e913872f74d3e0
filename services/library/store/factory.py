"""Pick the vector store from settings: a server URL, else an embedded local path."""

from __future__ import annotations

from pathlib import Path

from services.library.settings import LibrarySettings
from services.library.store.ann import AnnParams
from services.library.store.base import VectorStore


def ann_params(settings: LibrarySettings) -> AnnParams | None:
    """The background dense index's parameters, or None for Edge's exact search."""
    if settings.library_dense_index != "hnsw":
        return None
    return AnnParams(
        m=settings.library_ann_m,
        ef_construction=settings.library_ann_ef_construction,
        ef_search=settings.library_ann_ef_search,
        threads=settings.library_ann_threads,
        save_interval_s=settings.library_ann_save_interval_s,
    )


def open_store(settings: LibrarySettings, *, path: Path | None = None) -> VectorStore:
    """Open (not yet ``ensure``) the configured store; ``path`` overrides for scratch use."""
    if settings.qdrant_url and path is None:
        from qdrant_client import QdrantClient

        from services.library.store.client import ClientStore

        client = QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
        return ClientStore(client, settings.qdrant_collection)
    local = path or settings.resolved_qdrant_path
    if settings.qdrant_local_engine == "edge":
        from services.library.store.edge import EdgeStore

        return EdgeStore(
            local / "edge",
            ann_params(settings),
            settings.library_release_store_pages_s,
            dense_datatype=settings.library_store_dense_datatype,
            release_page_cache=settings.library_release_store_page_cache,
        )
    from qdrant_client import QdrantClient

    from services.library.store.client import ClientStore

    return ClientStore(QdrantClient(path=str(local / "client")), settings.qdrant_collection)
