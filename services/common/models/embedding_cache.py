"""Chunk vectors computed once per (model, text): re-ingests, retries and other
collections holding the same text reuse them instead of re-embedding."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, LargeBinary, String, func
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base


class EmbeddingCacheEntry(Base):
    __tablename__ = "embedding_cache"

    # backend|model|window (Embedder.model_key): vectors of different backends never mix.
    model: Mapped[str] = mapped_column(String(300), primary_key=True)
    text_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)  # float32, little-endian
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
