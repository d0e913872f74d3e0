"""Hybrid retrieval: dense + BM25 (optionally RM3-expanded, ``prf.py``), fused
by ``fusion.py`` (RRF or normalised scores, by chunk or by document), optional
cross-encoder rerank, per-paper caps, and the modes of FEATURES.md "Library".

No LLM call happens here: survey's extra queries come from the query text itself.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from services.library.embedding import Embedder
from services.library.fusion import FusionConfig, SearchHit, fuse
from services.library.lexical import Bm25Encoder
from services.library.prf import PrfConfig, expand
from services.library.settings import LibrarySettings
from services.library.store.base import Hit, VectorStore

Mode = Literal["survey", "derive", "write", "keyword", "vector", "mix"]
MODES: tuple[str, ...] = ("survey", "derive", "write", "keyword", "vector", "mix")
FORMAL_KINDS = ("environment", "equation")
# The lexical list is searched beside the query embedding and the dense search: the
# store's sparse search and ONNX/hnswlib run outside the GIL, so a hybrid query waits
# for the slower of the two, not their sum. Shared by every retriever in the process.
_LEXICAL_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="lexical-search")


def fusion_config(settings: LibrarySettings) -> FusionConfig:
    return FusionConfig(
        rrf_k=settings.rrf_k,
        dense_weight=settings.dense_weight,
        lexical_weight=settings.lexical_weight,
        candidates=settings.fusion_candidates,
        per_paper_cap=settings.per_paper_cap,
        method=settings.fusion_method,
        unit=settings.fusion_unit,
        doc_chunks=settings.fusion_doc_chunks,
        doc_decay=settings.fusion_doc_decay,
        prf=PrfConfig(docs=settings.prf_docs, terms=settings.prf_terms, weight=settings.prf_weight),
    )


def rrf(ranked: list[tuple[list[Hit], float]], k: int) -> list[SearchHit]:
    """Weighted reciprocal-rank fusion of several ranked lists, chunk by chunk."""
    return fuse(ranked, FusionConfig(rrf_k=k, method="rrf", unit="chunk"))


def cap_per_paper(hits: list[SearchHit], cap: int) -> list[SearchHit]:
    if cap <= 0:
        return hits
    seen: dict[str, int] = {}
    out = []
    for hit in hits:
        doc = str(hit.payload.get("document_id"))
        if seen.get(doc, 0) < cap:
            seen[doc] = seen.get(doc, 0) + 1
            out.append(hit)
    return out


def survey_queries(query: str) -> list[str]:
    """Split a multi-facet query ("A; B and C") into facets for multi-query fusion."""
    facets = [f.strip() for f in re.split(r";|,|\band\b|\bvs\.?\b", query) if len(f.strip()) > 3]
    return [query, *facets] if len(facets) > 1 else [query]


class Retriever:
    def __init__(
        self,
        *,
        store: VectorStore,
        embedder: Embedder,
        encoder: Bm25Encoder,
        fusion: FusionConfig | None = None,
        reranker: Any = None,
        rerank_top_n: int = 30,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.encoder = encoder
        self.fusion = fusion or FusionConfig()
        self.reranker = reranker
        self.rerank_top_n = rerank_top_n

    def _lists(
        self, query: str, collections: list[str], mode: str, vector: np.ndarray | None
    ) -> list[tuple[list[Hit], float]]:
        f = self.fusion
        lexical = None
        if mode != "vector":
            lexical = _LEXICAL_POOL.submit(self._lexical, query, collections)
        lists: list[tuple[list[Hit], float]] = []
        if mode != "keyword":
            dense = vector if vector is not None else self.embedder.encode_query(query)
            hits = self.store.search_dense(
                dense.tolist(), collections=collections, limit=f.candidates
            )
            lists.append((hits, f.dense_weight))
        if lexical is not None:
            lists.append((lexical.result(), f.lexical_weight))
        return lists

    def _lexical(self, query: str, collections: list[str]) -> list[Hit]:
        """The BM25 list; with feedback on, a second search with the RM3-expanded query."""
        limit = self.fusion.candidates
        hits = self.store.search_sparse(
            self.encoder.encode_query(query), collections=collections, limit=limit
        )
        expanded = expand(self.encoder, query, hits, self.fusion.prf)
        if expanded is None:
            return hits
        return self.store.search_sparse(expanded, collections=collections, limit=limit)

    def search(
        self,
        query: str,
        *,
        collections: list[str],
        mode: str = "mix",
        k: int = 10,
        per_paper_cap: int | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[SearchHit]:
        """Ranked chunks for ``query`` within ``collections`` (see module docstring)."""
        lists = self.candidates(query, collections=collections, mode=mode, vector=query_vector)
        return self.rank(query, lists, mode=mode, k=k, per_paper_cap=per_paper_cap)

    def candidates(
        self, query: str, *, collections: list[str], mode: str, vector: np.ndarray | None = None
    ) -> list[tuple[list[Hit], float]]:
        """The weighted ranked lists that ``rank`` fuses (one per retriever and facet)."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if mode == "survey":
            return [
                lst
                for q in survey_queries(query)
                for lst in self._lists(q, collections, "mix", None)
            ]
        base = mode if mode in ("keyword", "vector") else "mix"
        return self._lists(query, collections, base, vector)

    def rank(
        self,
        query: str,
        lists: list[tuple[list[Hit], float]],
        *,
        mode: str,
        k: int,
        per_paper_cap: int | None = None,
    ) -> list[SearchHit]:
        """Fuse, rerank, shape and cap ``lists`` (kept apart so evaluation can
        re-fuse the same candidates under other fusion settings)."""
        if mode in ("keyword", "vector"):
            fused = [SearchHit(h.id, h.score, h.payload) for h in lists[0][0]]
        else:
            fused = fuse(lists, self.fusion)
        fused = self._rerank(query, fused)
        fused = self._shape(fused, mode)
        cap = per_paper_cap if per_paper_cap is not None else self._default_cap(mode)
        return cap_per_paper(fused, cap)[:k]

    def _default_cap(self, mode: str) -> int:
        if mode in ("keyword", "vector", "derive"):
            return 0  # raw modes rank chunks as they are; derive keeps a paper's chain
        return 2 if mode == "survey" else self.fusion.per_paper_cap

    def _rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:
        if self.reranker is None or not hits:
            return hits
        head = hits[: self.rerank_top_n]
        scores = self.reranker.predict([(query, h.payload.get("text", "")) for h in head])
        for hit, score in zip(head, scores, strict=True):
            hit.score = float(score)
        return sorted(head, key=lambda h: h.score, reverse=True) + hits[self.rerank_top_n :]

    @staticmethod
    def _shape(hits: list[SearchHit], mode: str) -> list[SearchHit]:
        """Mode-specific weighting: formal statements first for derive/write; a survey
        reads what papers say, not their bibliographies (reference lists dropped)."""
        if mode == "survey":
            return [h for h in hits if h.payload.get("kind") != "reference"]
        if mode == "write":
            hits = [h for h in hits if h.payload.get("kind") != "reference"]
            for h in hits:
                if h.payload.get("kind") in FORMAL_KINDS:
                    # ×1.3 for a positive score; fused z-scores can be negative,
                    # and a boost must still raise them.
                    h.score += 0.3 * abs(h.score)
            return sorted(hits, key=lambda h: h.score, reverse=True)
        if mode == "derive":
            return _derivation_chain(hits)
        return hits


def _derivation_chain(hits: list[SearchHit]) -> list[SearchHit]:
    """Order a paper's hits from premises to target: formal statements of the
    best paper in reading order (definitions and lemmas precede what uses them),
    then the rest by score."""
    if not hits:
        return hits
    best_doc = hits[0].payload.get("document_id")
    chain = [
        h
        for h in hits[:30]
        if h.payload.get("document_id") == best_doc and h.payload.get("kind") in FORMAL_KINDS
    ]
    if hits[0] not in chain:
        chain.append(hits[0])
    chain.sort(key=lambda h: int(h.payload.get("ordinal", 0)))
    rest = [h for h in hits if h not in chain]
    return chain + rest
