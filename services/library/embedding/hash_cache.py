"""Chunk vectors computed once per (model, sha256(text)), kept in Postgres.

Guarantee: a text whose vector is in ``embedding_cache`` for this model is
never run through the model again — not on a retry after a crash, not on a
re-ingest, not when another collection holds the same paper. Vectors are
committed per batch, before the store upsert, so a worker killed mid-document
loses at most the batch in flight.
"""

from __future__ import annotations

import hashlib

import numpy as np
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import EmbeddingCacheEntry
from services.library.embedding.base import Embedder


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class HashCachedEmbedder(Embedder):
    """Wraps the chunk embedder; ``reused`` and ``inner.computed`` count hits and misses."""

    def __init__(self, inner: Embedder, session_factory: sessionmaker[Session]) -> None:
        super().__init__(
            model=inner.model_name,
            device=inner.device,
            batch_size=inner.batch_size,
            max_seq_length=inner.max_seq_length,
            length_buckets=inner.length_buckets,
        )
        self.backend = inner.backend
        self.inner = inner
        self.session_factory = session_factory
        self.reused = 0

    @property
    def model_key(self) -> str:
        return self.inner.model_key

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def lengths(self, texts: list[str]) -> list[int]:
        return self.inner.lengths(texts)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.inner.encode(texts)

    def encode_query(self, text: str) -> np.ndarray:
        return self.inner.encode_query(text)

    def lookup(self, hashes: list[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        table = EmbeddingCacheEntry
        with self.session_factory() as db:
            rows = db.execute(
                select(table.text_sha256, table.vector).where(
                    table.model == self.model_key, table.text_sha256.in_(hashes)
                )
            ).all()
        return {h: np.frombuffer(v, dtype="<f4").astype(np.float32) for h, v in rows}

    def _save(self, hashes: list[str], vectors: np.ndarray) -> None:
        rows = [
            {"model": self.model_key, "text_sha256": h, "vector": v.astype("<f4").tobytes()}
            for h, v in zip(hashes, vectors, strict=True)
        ]
        with self.session_factory() as db, db.begin():
            # Two workers embedding the same text at once: the first row wins, both are right.
            db.execute(insert(EmbeddingCacheEntry).values(rows).on_conflict_do_nothing())

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.encode_counted(texts)[0]

    def encode_counted(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), 0
        hashes = [text_hash(t) for t in texts]
        known = self.lookup(list(dict.fromkeys(hashes)))
        missing = [h for h in dict.fromkeys(hashes) if h not in known]
        if missing:
            by_hash = dict(zip(hashes, texts, strict=True))
            fresh = self.inner.encode([by_hash[h] for h in missing])
            self._save(missing, fresh)
            known.update(zip(missing, fresh, strict=True))
        self.reused += len(texts) - len(missing)
        return np.stack([known[h] for h in hashes]), len(missing)
