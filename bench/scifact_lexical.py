"""SciFact lexical and document-scoring levers (bench/library_scifact.py --lexical-levers).

BM25 variants need a re-index each (the document side carries BM25's
saturated tf), so they are scored on an in-memory replica of the store's
sparse search: the same chunks, ``Bm25Encoder.encode_document`` weights and
Qdrant's IDF modifier, ln(1 + (N - n + 0.5) / (n + 0.5)) over the chunk count.
Its default-settings figure is printed beside the store's, so the replica is
checked in the same run. A variant's hybrid figure fuses its BM25 list with the
store's dense list from the same run under the shipped fusion.

k1/b are chosen on one crc32 half of the claims and reported on the other half
and on the full set (both ways round), as ``scifact_levers`` does for fusion.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import Stemmer

from services.library.beir import BeirSet, Candidates, document_chunks, score
from services.library.fusion import FusionConfig
from services.library.indexing import CHUNK_NAMESPACE
from services.library.lexical import STOPWORDS, TOKEN, Bm25Encoder, Bm25Params, SparseVector
from services.library.retrieval import Retriever
from services.library.store.base import Hit

DEPTH = 200


class VariantEncoder(Bm25Encoder):
    """The production encoder with another stemmer or stop-word list."""

    def __init__(self, params: Bm25Params, *, stemmer: str | None, stopwords: frozenset[str]):
        super().__init__(params)
        self._algo = Stemmer.Stemmer(stemmer) if stemmer else None
        self._stop = stopwords

    def terms(self, text: str) -> list[str]:
        words = [w for w in TOKEN.findall(text.lower()) if w not in self._stop]
        return list(self._algo.stemWords(words)) if self._algo else words


class MemoEncoder(Bm25Encoder):
    """The production encoder, its term lists remembered across k1/b variants."""

    # Shared by every instance: the tokeniser does not depend on k1/b.
    _memo: dict[str, list[str]] = {}

    def terms(self, text: str) -> list[str]:
        if text not in self._memo:
            self._memo[text] = super().terms(text)
        return self._memo[text]


class Replica:
    """An inverted index of sparse document vectors scored like the store
    (IDF folded into each term's postings)."""

    def __init__(self, rows: Iterable[tuple[str, dict[str, Any], SparseVector]]) -> None:
        self.units: list[tuple[str, dict[str, Any]]] = []
        lists: dict[int, tuple[list[int], list[float]]] = {}
        for point_id, payload, vector in rows:
            for tid, value in zip(vector.indices, vector.values, strict=True):
                units, values = lists.setdefault(tid, ([], []))
                units.append(len(self.units))
                values.append(value)
            self.units.append((point_id, payload))
        n = len(self.units)
        self.postings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for tid, (units, values) in lists.items():
            idf = np.log(1 + (n - len(units) + 0.5) / (len(units) + 0.5))
            self.postings[tid] = (np.array(units), np.array(values) * idf)

    def search(self, query: SparseVector, limit: int = DEPTH) -> list[Hit]:
        scores = np.zeros(len(self.units))
        for tid, weight in zip(query.indices, query.values, strict=True):
            if tid in self.postings:
                units, values = self.postings[tid]
                scores[units] += weight * values  # a unit appears once per term
        hit = np.flatnonzero(scores > 0)
        top = hit[np.argsort(-scores[hit], kind="stable")][:limit]
        return [Hit(self.units[u][0], float(scores[u]), self.units[u][1]) for u in top]


_CHUNKED: dict[tuple[int, int], list[Any]] = {}


def _chunked(data: BeirSet, max_tokens: int) -> list[Any]:
    """Chunking is the slow part of a replica build, and the same for every variant."""
    key = (id(data), max_tokens)
    if key not in _CHUNKED:
        _CHUNKED[key] = document_chunks(data, max_tokens=max_tokens)
    return _CHUNKED[key]


def chunk_replica(data: BeirSet, encoder: Bm25Encoder, max_tokens: int) -> Replica:
    """Chunks as ingestion indexes them (title per the encoder's title mode)."""
    rows = []
    for doc_id, title, chunks in _chunked(data, max_tokens):
        for chunk in chunks:
            payload = {"document_id": doc_id, "ordinal": chunk.ordinal}
            chunk_id = str(uuid.uuid5(CHUNK_NAMESPACE, f"{doc_id}:{chunk.ordinal}"))
            rows.append((chunk_id, payload, encoder.encode_document(chunk.text, title=title)))
    return Replica(rows)


def doc_replica(data: BeirSet, encoder: Bm25Encoder) -> Replica:
    """One unit per paper: title + the whole abstract as one field."""
    rows = []
    for doc_id, (title, text) in data.corpus.items():
        payload = {"document_id": doc_id, "ordinal": -1}
        rows.append((f"paper:{doc_id}", payload, encoder.encode_document(text, title=title)))
    return Replica(rows)


def half(data: BeirSet, parity: int) -> BeirSet:
    keep = {q: t for q, t in data.queries.items() if zlib.crc32(q.encode()) % 2 == parity}
    return BeirSet(data.corpus, keep, {q: data.qrels[q] for q in keep})


def _lists(replica: Replica, encoder: Bm25Encoder, data: BeirSet) -> dict[str, list[Hit]]:
    return {q: replica.search(encoder.encode_query(t)) for q, t in data.queries.items()}


def _with(base: Retriever, fusion: FusionConfig) -> Retriever:
    return Retriever(store=base.store, embedder=base.embedder, encoder=base.encoder, fusion=fusion)


def _figures(
    base: Retriever, data: BeirSet, bm25: dict[str, list[Hit]], mix: Candidates
) -> dict[str, Any]:
    """BM25 alone and hybrid (store dense list + this BM25 list, shipped fusion)."""
    f = base.fusion
    sparse = {q: [(bm25[q], 1.0)] for q in data.queries}
    hybrid = {
        q: [(mix[q][0][0], f.dense_weight), (bm25[q], f.lexical_weight)] for q in data.queries
    }
    return {
        "bm25": score(base, data, mode="keyword", candidates=sparse)["ndcg@10"],
        "hybrid": score(base, data, mode="mix", candidates=hybrid),
    }


Make = Callable[[Bm25Params], Bm25Encoder]


def _shipped(params: Bm25Params) -> Bm25Encoder:
    return MemoEncoder(params)


def tokeniser_rows(
    base: Retriever, data: BeirSet, mix: Candidates, max_tokens: int
) -> list[dict[str, Any]]:
    """Stemmer and stop-word variants at the shipped k1/b/avg_len."""
    params = base.encoder.params
    big = frozenset(STOPWORDS | _SKLEARN_STOPWORDS)
    bigger = (
        [
            (
                f"snowball, {len(big)}-word stop list (shipped + sklearn)",
                lambda p: VariantEncoder(p, stemmer="english", stopwords=big),
            )
        ]
        if _SKLEARN_STOPWORDS
        else []
    )
    variants: list[tuple[str, Make]] = [
        ("shipped: snowball english, shipped stop words", _shipped),
        ("porter", lambda p: VariantEncoder(p, stemmer="porter", stopwords=STOPWORDS)),
        ("no stemmer", lambda p: VariantEncoder(p, stemmer=None, stopwords=STOPWORDS)),
        (
            "snowball, no stop words",
            lambda p: VariantEncoder(p, stemmer="english", stopwords=frozenset()),
        ),
    ]
    rows = []
    for name, make in variants + bigger:
        encoder = make(params)
        bm25 = _lists(chunk_replica(data, encoder, max_tokens), encoder, data)
        rows.append({"lever": f"tokeniser: {name}", **_figures(base, data, bm25, mix)})
    return rows


def k1b_rows(
    base: Retriever, data: BeirSet, mix: Candidates, max_tokens: int, make: Make = _shipped
) -> list[dict[str, Any]]:
    """k1 × b chosen on one half (BM25 nDCG@10 there), reported elsewhere."""
    params = base.encoder.params
    grid = [(k1, b) for k1 in (0.6, 0.9, 1.2, 1.5, 2.0) for b in (0.2, 0.4, 0.6, 0.75, 0.9)]
    per: dict[tuple[float, float], dict[str, list[Hit]]] = {}
    for k1, b in grid:
        encoder = make(replace(params, k1=k1, b=b))
        per[(k1, b)] = _lists(chunk_replica(data, encoder, max_tokens), encoder, data)
    rows = []
    for parity in (0, 1):
        train, test = half(data, parity), half(data, 1 - parity)

        def on_train(kb: tuple[float, float], train: BeirSet = train) -> float:
            sparse = {q: [(per[kb][q], 1.0)] for q in train.queries}
            return score(base, train, mode="keyword", candidates=sparse)["ndcg@10"]

        best = max(grid, key=on_train)
        shipped = (params.k1, params.b)
        rows.append(
            {
                "lever": f"k1/b chosen on half {parity}: k1 {best[0]} b {best[1]}",
                "train_half_bm25": on_train(best),
                "other_half": _figures(base, test, per[best], mix),
                "other_half_shipped": _figures(base, test, per[shipped], mix)
                if shipped in per
                else None,
                "full": _figures(base, data, per[best], mix),
            }
        )
    return rows


def doc_bm25_rows(
    base: Retriever, data: BeirSet, mix: Candidates, max_tokens: int
) -> list[dict[str, Any]]:
    """Paper-level BM25 (title + abstract as one field list), alone and as a
    third list beside passage BM25 and dense (shipped fusion)."""
    p = base.encoder.params
    lengths = [len(base.encoder.terms(f"{t} {x}")) for t, x in data.corpus.values()]
    avg = sum(lengths) / max(1, len(lengths))
    encoder = MemoEncoder(replace(p, avg_len=avg))
    docs = _lists(doc_replica(data, encoder), encoder, data)
    chunks = _lists(chunk_replica(data, base.encoder, max_tokens), base.encoder, data)
    rows = [
        {"lever": f"paper-level BM25 alone (avg_len {avg:.0f})", **_figures(base, data, docs, mix)}
    ]
    f = base.fusion
    for w in (0.5, 1.0):
        lists = {
            q: [(mix[q][0][0], f.dense_weight), (chunks[q], f.lexical_weight), (docs[q], w)]
            for q in data.queries
        }
        rows.append(
            {
                "lever": f"dense + passage BM25 + paper BM25 (weight {w})",
                "hybrid": score(base, data, mode="mix", candidates=lists),
            }
        )
    for w in (0.5, 1.0):
        lists = {q: [(mix[q][0][0], f.dense_weight), (docs[q], w)] for q in data.queries}
        rows.append(
            {
                "lever": f"dense + paper BM25 only (weight {w})",
                "hybrid": score(base, data, mode="mix", candidates=lists),
            }
        )
    return rows


def doc_scoring_rows(base: Retriever, data: BeirSet, mix: Candidates) -> list[dict[str, Any]]:
    """How a paper's chunks make its score in each list before fusion: best
    chunk (shipped), best + decay × next, on the store's own lists."""
    rows = []
    shipped = base.fusion
    for n, decay in ((1, 0.0), (2, 0.3), (2, 0.5), (2, 1.0), (3, 0.5)):
        fusion = replace(shipped, doc_chunks=n, doc_decay=decay)
        rows.append(
            {
                "lever": f"paper score = top {n} chunks, decay {decay}",
                "hybrid": score(_with(base, fusion), data, mode="mix", candidates=mix),
            }
        )
    return rows


def _paper_mean(sims: list[float]) -> float:
    return sum(sims) / len(sims)


def _paper_top2(sims: list[float]) -> float:
    return sims[0] + 0.5 * (sims[1] if len(sims) > 1 else 0.0)


def _paper_sum(sims: list[float]) -> float:
    return sum(sims)


def rescored_dense(mix: Candidates, paper: Callable[[list[float]], float]) -> Candidates:
    """The dense list with each chunk rescored to ``paper`` of its paper's chunk
    sims in the list (best first), ordered by that; the BM25 list untouched."""
    out: Candidates = {}
    for q, lists in mix.items():
        (dense, w), rest = lists[0], lists[1:]
        sims: dict[str, list[float]] = {}
        for h in dense:
            sims.setdefault(str(h.payload["document_id"]), []).append(h.score)
        value = {d: paper(v) for d, v in sims.items()}
        hits = [Hit(h.id, value[str(h.payload["document_id"])], h.payload) for h in dense]
        hits.sort(key=lambda h: -h.score)
        out[q] = [(hits, w), *rest]
    return out


def lexical_rows(
    base: Retriever, data: BeirSet, mix: Candidates, max_tokens: int
) -> list[dict[str, Any]]:
    replica = _lists(chunk_replica(data, base.encoder, max_tokens), base.encoder, data)
    rows = [{"lever": "replica check: shipped BM25", **_figures(base, data, replica, mix)}]
    rows += tokeniser_rows(base, data, mix, max_tokens)
    rows += k1b_rows(base, data, mix, max_tokens)
    rows += doc_bm25_rows(base, data, mix, max_tokens)
    rows += doc_scoring_rows(base, data, mix)
    for name, paper in (
        ("mean", _paper_mean),
        ("best + 0.5 x second", _paper_top2),
        ("sum", _paper_sum),
    ):
        rows.append(
            {
                "lever": f"dense paper score = {name} of its chunks in the list (BM25: best)",
                "hybrid": score(base, data, mode="mix", candidates=rescored_dense(mix, paper)),
            }
        )
    return rows


_SKLEARN_STOPWORDS: frozenset[str] = frozenset()
try:  # only for one lever row; scikit-learn comes with sentence-transformers, not pinned
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    _SKLEARN_STOPWORDS = frozenset(ENGLISH_STOP_WORDS)
except ImportError:  # pragma: no cover
    pass
