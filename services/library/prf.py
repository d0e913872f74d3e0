"""Pseudo-relevance feedback on BM25 (RM3): expand a query with the terms of
the passages a first BM25 search ranked highest.

Guarantee: with ``docs`` 0 the query is returned unchanged (no second search);
otherwise the expanded query keeps every original term, at ``weight`` of the
total, and adds at most ``terms`` feedback terms sharing the rest. Feedback
documents are distinct papers (their best chunk, title included), weighted by
their first-pass score, so one long paper cannot fill the feedback set.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from services.library.lexical import Bm25Encoder, SparseVector
from services.library.store.base import Hit


@dataclass(frozen=True)
class PrfConfig:
    docs: int = 0  # feedback papers; 0 = off
    terms: int = 10
    weight: float = 0.5  # the original query's share of the expanded one


def expanded_terms(
    encoder: Bm25Encoder, query: str, hits: list[Hit], config: PrfConfig
) -> dict[str, float] | None:
    """RM3 term weights for ``query`` from first-pass ``hits`` (None: nothing to add)."""
    original = Counter(encoder.terms(query))
    if config.docs <= 0 or not original or not hits:
        return None
    feedback: list[tuple[Counter[str], float]] = []
    seen: set[str] = set()
    for hit in hits:
        doc = str(hit.payload.get("document_id", hit.id))
        if doc in seen:
            continue
        seen.add(doc)
        text = f"{hit.payload.get('title') or ''} {hit.payload.get('text') or ''}"
        counts = Counter(encoder.terms(text))
        if counts:
            feedback.append((counts, max(hit.score, 0.0)))
        if len(feedback) >= config.docs:
            break
    total_score = sum(s for _, s in feedback) or 1.0
    relevance: dict[str, float] = {}
    for counts, score in feedback:
        length = sum(counts.values())
        for term, n in counts.items():
            relevance[term] = relevance.get(term, 0.0) + (n / length) * (score / total_score)
    chosen = sorted(relevance, key=lambda t: relevance[t], reverse=True)[: config.terms]
    mass = sum(relevance[t] for t in chosen) or 1.0
    qlen = sum(original.values())
    out = {t: config.weight * n / qlen for t, n in original.items()}
    for term in chosen:
        out[term] = out.get(term, 0.0) + (1 - config.weight) * relevance[term] / mass
    return out


def expand(
    encoder: Bm25Encoder, query: str, hits: list[Hit], config: PrfConfig
) -> SparseVector | None:
    """The expanded BM25 query vector, or None when feedback is off or empty."""
    weights = expanded_terms(encoder, query, hits, config)
    return None if weights is None else encoder.query_from_terms(weights)
