"""Embedding cosine between claim and passage, through an injected encoder.

The encoder is anything with ``encode(texts) -> vectors`` (the library's
``Embedder`` is one; the library service and ``services.library.operator`` hand
it in). This module never loads a model: without an encoder the checker runs
lexical-only and says so in its verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from services.common.claims.result import CheckResult

# MiniLM cosines: a claim and an abstract on another topic sit near 0.05-0.2, a
# claim and its own evidence near 0.5-0.8. The value maps [FLOOR, CEIL] to [0, 1].
COSINE_FLOOR = 0.15
COSINE_CEIL = 0.6
EMBEDDING_PASS = 0.35


class Encoder(Protocol):
    """``encode(texts)``: one vector per text, in order (normalised or not)."""

    def encode(self, texts: list[str]) -> Any: ...


def cosine_value(cosine: float) -> float:
    """A cosine mapped onto [0, 1] between the unrelated and the supporting range."""
    return float(min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR))))


def embedding_checks(encoder: Encoder, pairs: Sequence[tuple[str, str]]) -> list[CheckResult]:
    """One check per (claim, passage) pair, encoded in one call."""
    if not pairs:
        return []
    texts = [t for pair in pairs for t in pair]
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"encoder gave {vectors.shape} for {len(texts)} texts")
    out = []
    for i in range(len(pairs)):
        a, b = vectors[2 * i], vectors[2 * i + 1]
        norm = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
        cosine = float(np.dot(a, b)) / norm
        value = cosine_value(cosine)
        out.append(CheckResult("embedding", value, value >= EMBEDDING_PASS, f"cosine {cosine:.3f}"))
    return out
