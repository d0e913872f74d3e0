"""Embedding cosine between claim and passage with the library's packaged MiniLM.

The encoder is injected: anything with ``encode(texts) -> unit vectors`` (the
library's ``Embedder`` is one). ``default_encoder`` loads the configured library
embedder and answers None when it cannot be loaded, so the checker runs
lexical-only rather than not at all; torch / onnxruntime are imported only then.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np

from services.library.claims.result import CheckResult

log = logging.getLogger(__name__)

# MiniLM cosines: a claim and an abstract on another topic sit near 0.05-0.2, a
# claim and its own evidence near 0.5-0.8. The value maps [FLOOR, CEIL] to [0, 1].
COSINE_FLOOR = 0.15
COSINE_CEIL = 0.6
EMBEDDING_PASS = 0.35


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


def default_encoder() -> Encoder | None:
    """The library's configured embedder (LEAFLAB_EMBEDDING_* settings), or None
    when its model or runtime is not available here (logged once)."""
    try:
        from services.library.embedding import embedder_from_settings
        from services.library.settings import LibrarySettings

        return embedder_from_settings(LibrarySettings())
    except Exception as exc:  # noqa: BLE001 - any load failure means "run without it"
        log.warning("claim check runs without embeddings: %s", exc)
        return None


def cosine_value(cosine: float) -> float:
    """A cosine mapped onto [0, 1] between the unrelated and the supporting range."""
    return float(min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR))))


def embedding_checks(encoder: Encoder, pairs: list[tuple[str, str]]) -> list[CheckResult]:
    """One check per (claim, passage) pair, encoded in one call."""
    if not pairs:
        return []
    texts = [t for pair in pairs for t in pair]
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
    out = []
    for i in range(len(pairs)):
        a, b = vectors[2 * i], vectors[2 * i + 1]
        norm = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
        cosine = float(np.dot(a, b)) / norm
        value = cosine_value(cosine)
        out.append(CheckResult("embedding", value, value >= EMBEDDING_PASS, f"cosine {cosine:.3f}"))
    return out
