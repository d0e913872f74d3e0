"""SciFact retrieval levers one at a time on ONE store index (bench/library_scifact.py --levers).

Every figure comes from the store's own candidate lists: fusion levers re-fuse
the lists the default search fetched; feedback (RM3) levers fetch the BM25
list again through ``Retriever.candidates`` with feedback on. Fusion weights
that are *learned* are chosen on one half of the claims (crc32 of the id,
parity) and scored on the other, both ways round. Latency: p50/p95 of
``Retriever.search`` (store + feedback + fusion, query vector precomputed) per
kept configuration, the old default timed in the same run as the baseline.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import replace
from typing import Any

from bench.harness import percentile
from services.library.beir import (
    SCRATCH,
    BeirSet,
    Candidates,
    collect_candidates,
    reweight,
    score,
)
from services.library.fusion import FusionConfig
from services.library.prf import PrfConfig
from services.library.retrieval import Retriever

OLD = FusionConfig(rrf_k=10, method="rrf", unit="chunk")  # the default before this round
LATENCY_QUERIES = 300


def _with(base: Retriever, fusion: FusionConfig) -> Retriever:
    return Retriever(store=base.store, embedder=base.embedder, encoder=base.encoder, fusion=fusion)


def _half(data: BeirSet, parity: int) -> BeirSet:
    keep = {q: t for q, t in data.queries.items() if zlib.crc32(q.encode()) % 2 == parity}
    return BeirSet(data.corpus, keep, {q: data.qrels[q] for q in keep})


def _sub(candidates: Candidates, data: BeirSet) -> Candidates:
    return {q: candidates[q] for q in data.queries}


def _figures(base: Retriever, data: BeirSet, fusion: FusionConfig, mix: Candidates) -> Any:
    lists = {q: reweight(c, fusion) for q, c in _sub(mix, data).items()}
    return score(_with(base, fusion), data, mode="mix", candidates=lists)


def _bm25(base: Retriever, data: BeirSet, fusion: FusionConfig, mix: Candidates) -> Any:
    lists = {q: [c[1]] for q, c in _sub(mix, data).items()}
    return score(_with(base, fusion), data, mode="keyword", candidates=lists)


def _latency(base: Retriever, data: BeirSet, fusion: FusionConfig) -> dict[str, float]:
    retriever = _with(base, fusion)
    ids = list(data.queries)[:LATENCY_QUERIES]
    vectors = base.embedder.encode([data.queries[q] for q in ids])
    times = []
    for qid, vector in zip(ids, vectors, strict=True):
        start = time.perf_counter()
        retriever.search(data.queries[qid], collections=[SCRATCH], query_vector=vector)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": round(percentile(times, 50), 1), "p95_ms": round(percentile(times, 95), 1)}


def _learned(
    base: Retriever, data: BeirSet, mix: Candidates, grid: list[tuple[str, FusionConfig]]
) -> list[dict[str, Any]]:
    """Choose on one half, report the other half (both ways)."""
    rows = []
    for parity in (0, 1):
        train, test = _half(data, parity), _half(data, 1 - parity)
        name, best = max(grid, key=lambda g: _figures(base, train, g[1], mix)["ndcg@10"])
        rows.append(
            {
                "lever": f"learned on half {parity}, scored on half {1 - parity}: {name}",
                "train_half": _figures(base, train, best, mix),
                "hybrid": _figures(base, test, best, mix),
                "old_default_same_half": _figures(base, test, OLD, mix),
            }
        )
    return rows


def lever_rows(base: Retriever, data: BeirSet, mix: Candidates) -> list[dict[str, Any]]:
    shipped = base.fusion
    rows: list[dict[str, Any]] = []
    shipped_mix = mix
    if shipped.prf.docs > 0:  # the one-at-a-time levers start from lists without feedback
        mix = collect_candidates(_with(base, replace(shipped, prf=PrfConfig())), data, mode="mix")

    def row(name: str, fusion: FusionConfig, lists: Candidates = mix, **extra: Any) -> None:
        figures = {"lever": name, "hybrid": _figures(base, data, fusion, lists), **extra}
        rows.append(figures)

    row("old default: RRF k10 by chunk", OLD)
    for k in (10, 30, 60):
        row(f"RRF k{k} by document (max chunk)", replace(OLD, rrf_k=k, unit="document"))
    for n, decay in ((2, 0.5), (3, 0.5)):
        row(
            f"RRF k10 by document, top {n} chunks, decay {decay}",
            replace(OLD, unit="document", doc_chunks=n, doc_decay=decay),
        )
    grid: list[tuple[str, FusionConfig]] = []
    for method in ("minmax", "zscore"):
        for unit in ("chunk", "document"):
            for dense_w in (0.3, 0.4, 0.5, 0.6, 0.7):
                name = f"{method} by {unit}, dense weight {dense_w}"
                fusion = replace(
                    OLD, method=method, unit=unit, dense_weight=dense_w, lexical_weight=1 - dense_w
                )
                grid.append((name, fusion))
                row(name, fusion)
    rows += _learned(base, data, mix, grid)
    for docs, terms, weight in ((5, 10, 0.5), (10, 20, 0.7)):
        prf = PrfConfig(docs=docs, terms=terms, weight=weight)
        fed = collect_candidates(_with(base, replace(shipped, prf=prf)), data, mode="mix")
        name = f"RM3 docs {docs} terms {terms} weight {weight}"
        row(f"{name} + old fusion", OLD, fed, bm25=_bm25(base, data, OLD, fed))
        row(f"{name} + shipped fusion", replace(shipped, prf=prf), fed)
    row(
        "shipped default (settings)",
        shipped,
        shipped_mix,
        bm25=_bm25(base, data, shipped, shipped_mix),
    )
    rows.append({"lever": "latency: old default", **_latency(base, data, OLD)})
    rows.append({"lever": "latency: shipped default", **_latency(base, data, shipped)})
    return rows
