"""Fusing ranked chunk lists into one ranking, by chunk or by document.

Guarantee: ``fuse`` is a pure function of the lists and the config; it returns
every chunk of every list exactly once, best first.

- ``unit="chunk"``: each chunk is scored on its own (the original behaviour).
- ``unit="document"``: each list is first collapsed to documents (a document's
  score is its best chunk's plus ``doc_decay`` times its next ones, up to
  ``doc_chunks`` of them), the documents are fused, and each chunk is placed
  at its document's fused score less its distance to that document's best
  chunk. So a paper that one retriever finds by its abstract and the other
  by its methods counts both, instead of ranking at the better of two halves.

Methods: ``rrf`` (weighted reciprocal rank, constant ``rrf_k``), ``minmax`` or
``zscore`` (each list's scores normalised over its own candidates, then a
weighted sum; an item missing from a list gets that list's lowest value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from services.library.prf import PrfConfig
from services.library.store.base import Hit

Method = Literal["rrf", "minmax", "zscore"]
Unit = Literal["chunk", "document"]


@dataclass
class SearchHit:
    id: str
    score: float
    payload: dict[str, Any]


@dataclass
class FusionConfig:
    """Defaults mirror LibrarySettings (see its comments for why)."""

    rrf_k: int = 10
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    candidates: int = 200
    per_paper_cap: int = 3
    method: Method = "zscore"
    unit: Unit = "document"
    doc_chunks: int = 1
    doc_decay: float = 0.0
    # BM25 pseudo-relevance feedback (the lexical list's query, before fusion).
    prf: PrfConfig = field(default_factory=PrfConfig)


def _doc(hit: Hit) -> str:
    return str(hit.payload.get("document_id", hit.id))


def _normalise(scores: dict[str, float], method: Method) -> tuple[dict[str, float], float]:
    """Normalised scores and the value an absent item gets (the list's lowest)."""
    if not scores:
        return {}, 0.0
    values = list(scores.values())
    if method == "minmax":
        lo, hi = min(values), max(values)
        span = (hi - lo) or 1.0
        return {i: (s - lo) / span for i, s in scores.items()}, 0.0
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    normed = {i: (s - mean) / std for i, s in scores.items()}
    return normed, min(normed.values())


def _combine(
    scored: list[tuple[dict[str, float], float]], config: FusionConfig
) -> dict[str, float]:
    """Weighted fusion of per-list item scores (each dict ordered best first)."""
    out: dict[str, float] = {}
    if config.method == "rrf":
        for scores, weight in scored:
            for rank, item in enumerate(sorted(scores, key=lambda i: -scores[i])):
                out[item] = out.get(item, 0.0) + weight / (config.rrf_k + rank + 1)
        return out
    normed = [(_normalise(scores, config.method), weight) for scores, weight in scored]
    items = {i for scores, _ in scored for i in scores}
    for item in items:
        out[item] = sum(w * n.get(item, floor) for (n, floor), w in normed)
    return out


def _by_document(hits: list[Hit], config: FusionConfig) -> dict[str, float]:
    """Document scores of one list: best chunk + decay × the next ones (hits are
    ranked best first; for RRF the chunk's rank score stands in for its score)."""
    parts: dict[str, list[float]] = {}
    for rank, hit in enumerate(hits):
        value = 1.0 / (config.rrf_k + rank + 1) if config.method == "rrf" else hit.score
        parts.setdefault(_doc(hit), []).append(value)
    return {
        doc: sum(v * config.doc_decay**n for n, v in enumerate(vals[: max(1, config.doc_chunks)]))
        for doc, vals in parts.items()
    }


def fuse(lists: list[tuple[list[Hit], float]], config: FusionConfig) -> list[SearchHit]:
    """One ranking of every chunk in ``lists`` (see the module docstring)."""
    payloads: dict[str, dict[str, Any]] = {}
    chunk_scores = []
    for hits, weight in lists:
        for hit in hits:
            payloads.setdefault(hit.id, hit.payload)
        chunk_scores.append(({h.id: h.score for h in hits}, weight))
    if config.method == "rrf":  # ranks, not scores: keep each list's own order
        chunk_scores = [({h.id: -float(r) for r, h in enumerate(hits)}, w) for hits, w in lists]
    by_chunk = _combine(chunk_scores, config)
    if config.unit == "document":
        docs = _combine([(_by_document(hits, config), w) for hits, w in lists], config)
        best: dict[str, float] = {}
        for chunk, value in by_chunk.items():
            doc = str(payloads[chunk].get("document_id", chunk))
            best[doc] = max(best.get(doc, value), value)
        placed = {}
        for chunk, value in by_chunk.items():
            doc = str(payloads[chunk].get("document_id", chunk))
            # The best chunk sits at its document's score, the others below it
            # by their distance to it (in the same units: both are fused scores).
            placed[chunk] = docs[doc] - (best[doc] - value)
        order = sorted(placed, key=lambda c: placed[c], reverse=True)
        return [SearchHit(c, placed[c], payloads[c]) for c in order]
    order = sorted(by_chunk, key=lambda c: by_chunk[c], reverse=True)
    return [SearchHit(c, by_chunk[c], payloads[c]) for c in order]
