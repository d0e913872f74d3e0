"""Everything one library process holds: DB, vector store, models, Celery app.

Built once (service lifespan or worker start), never at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.db import build_engine, build_sessionmaker
from services.common.documents.blobs import BlobStore
from services.common.net_guard import NetGuard, parse_allow_list
from services.common.redis_client import build_redis
from services.library.embedding import Embedder, HashCachedEmbedder, embedder_from_settings
from services.library.lexical import Bm25Encoder
from services.library.metadata.lookup import MetadataLookup, build_lookup
from services.library.parsing.isolated import ParseLimits
from services.library.retrieval import Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store import VectorStore, open_store


@dataclass
class LibraryRuntime:
    settings: LibrarySettings
    engine: Engine
    session_factory: sessionmaker[Session]
    store: VectorStore
    embedder: Embedder  # queries
    chunk_embedder: HashCachedEmbedder  # ingestion: once per chunk text (Postgres cache)
    encoder: Bm25Encoder
    retriever: Retriever
    blobs: BlobStore
    celery: Celery
    net_guard: NetGuard
    # OpenAlex / Crossref after extraction; None when off or not reachable.
    metadata_lookup: MetadataLookup | None = None
    redis: redis.Redis | None = None  # ingestion progress events (none: not published)

    @property
    def parse_limits(self) -> ParseLimits:
        s = self.settings
        return ParseLimits(
            s.parse_memory_mb,
            s.parse_timeout_s,
            s.parse_max_pages,
            s.parse_pool_size,
            s.parse_docs_per_process,
            s.parse_recycle_rss_mb,
        )

    def close(self) -> None:
        self.store.close()
        self.engine.dispose()


def _reranker(settings: LibrarySettings) -> Any:
    if not settings.rerank_model:
        return None
    from sentence_transformers import CrossEncoder

    device = None if settings.embedding_device == "auto" else settings.embedding_device
    return CrossEncoder(settings.rerank_model, device=device)


def build_runtime(settings: LibrarySettings) -> LibraryRuntime:
    engine = build_engine(settings.require_database_url(), pool_size=5)
    embedder = embedder_from_settings(settings)
    store = open_store(settings)
    store.ensure(embedder.dimension)
    encoder = Bm25Encoder(settings.bm25_params())
    fusion = fusion_config(settings)
    retriever = Retriever(
        store=store,
        embedder=embedder,
        encoder=encoder,
        fusion=fusion,
        reranker=_reranker(settings),
        rerank_top_n=settings.rerank_top_n,
    )
    session_factory = build_sessionmaker(engine)
    guard = NetGuard(parse_allow_list(settings.web_allow))
    return LibraryRuntime(
        settings=settings,
        engine=engine,
        session_factory=session_factory,
        store=store,
        embedder=embedder,
        chunk_embedder=HashCachedEmbedder(embedder, session_factory),
        encoder=encoder,
        retriever=retriever,
        blobs=BlobStore(settings.resolved_files_dir),
        celery=build_celery(settings),
        net_guard=guard,
        metadata_lookup=build_lookup(settings, guard),
        redis=build_redis(settings.redis_url) if settings.redis_url else None,
    )
