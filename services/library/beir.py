"""`leaflab library eval`: index a BEIR set through the real chunk → embed → store
path in a scratch store and score retrieval (nDCG@10, recall@100)."""

from __future__ import annotations

import csv
import json
import math
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common.contracts.collections import Collection
from services.library.chunking import Chunk, chunk_blocks
from services.library.embedding import CachedEmbedder, Embedder, embedder_from_settings
from services.library.indexing import embed_text, index_chunks
from services.library.lexical import Bm25Encoder
from services.library.retrieval import FusionConfig, Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store.base import Hit, VectorStore
from services.library.store.factory import open_store

# The throw-away store's one collection: a valid one (the nil UUID's personal
# library, which no member has), so the evaluation indexes and filters exactly as
# ingestion does, through the same ``Collection``-typed path.
SCRATCH = Collection.personal(uuid.UUID(int=0))


@dataclass
class BeirSet:
    corpus: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(
    root: Path, *, limit_docs: int | None = None, limit_queries: int | None = None
) -> BeirSet:
    """Load a BEIR folder; limits keep the judged documents of the kept queries."""
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (root / name).is_file():
            raise FileNotFoundError(f"{root / name} is missing (a BEIR folder needs it)")
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels.tsv").open(encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) < 3 or not row[2].strip().lstrip("-").isdigit():
                continue  # header line
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries = {q["_id"]: q["text"] for q in _jsonl(root / "queries.jsonl") if q["_id"] in qrels}
    if limit_queries:
        queries = dict(list(queries.items())[:limit_queries])
    qrels = {q: qrels[q] for q in queries}
    corpus = {
        d["_id"]: (d.get("title") or "", d.get("text") or "") for d in _jsonl(root / "corpus.jsonl")
    }
    if limit_docs and limit_docs < len(corpus):
        judged = [d for rel in qrels.values() for d in rel if d in corpus]
        keep = list(dict.fromkeys(judged))[:limit_docs]
        keep += [d for d in corpus if d not in set(keep)][: max(0, limit_docs - len(keep))]
        corpus = {d: corpus[d] for d in keep}
    return BeirSet(corpus, queries, qrels)


def document_chunks(data: BeirSet, *, max_tokens: int) -> list[tuple[str, str, list[Chunk]]]:
    """(doc id, title, chunks) per document, chunked exactly as ingestion chunks."""
    out = []
    for doc_id, (title, text) in data.corpus.items():
        blocks = [{"page": 1, "kind": "para", "text": text, "section": []}]
        out.append(
            (doc_id, title, chunk_blocks(blocks, paper=title or doc_id, max_tokens=max_tokens))
        )
    return out


def build_index(
    data: BeirSet, *, embedder: Embedder, encoder: Bm25Encoder, store: VectorStore, max_tokens: int
) -> int:
    docs = document_chunks(data, max_tokens=max_tokens)
    if isinstance(embedder, CachedEmbedder):
        embedder.warm([embed_text(c, title) for _, title, chunks in docs for c in chunks])
    total = 0
    for doc_id, title, chunks in docs:
        total += index_chunks(
            chunks,
            document_id=doc_id,
            collection=SCRATCH,
            title=title,
            filename=None,
            embedder=embedder,
            encoder=encoder,
            store=store,
        ).done
    return total


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


Candidates = dict[str, list[tuple[list[Hit], float]]]


def collect_candidates(retriever: Retriever, data: BeirSet, *, mode: str) -> Candidates:
    """Each query's ranked lists from the store, fetched once (query vectors in
    one batch) so several fusion settings can be scored on the same lists."""
    ids = list(data.queries)
    vectors = retriever.embedder.encode([data.queries[q] for q in ids])
    return {
        qid: retriever.candidates(
            data.queries[qid], collections=[SCRATCH], mode=mode, vector=vector
        )
        for qid, vector in zip(ids, vectors, strict=True)
    }


def reweight(
    lists: list[tuple[list[Hit], float]], fusion: FusionConfig
) -> list[tuple[list[Hit], float]]:
    """Mix-mode lists (dense, then BM25) under ``fusion``'s weights."""
    (dense, _), (sparse, _) = lists
    return [(dense, fusion.dense_weight), (sparse, fusion.lexical_weight)]


def score(
    retriever: Retriever, data: BeirSet, *, mode: str, candidates: Candidates | None = None
) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 over the queries (a document ranks at its
    best chunk's place: per-paper cap 1)."""
    if candidates is None:
        candidates = collect_candidates(retriever, data, mode=mode)
    ndcg = recall = 0.0
    for qid, lists in candidates.items():
        hits = retriever.rank(data.queries[qid], lists, mode=mode, k=100, per_paper_cap=1)
        ranked = [str(h.payload["document_id"]) for h in hits]
        rels = {d: r for d, r in data.qrels[qid].items() if r > 0}
        ndcg += ndcg_at(ranked, rels, 10)
        recall += len(set(ranked[:100]) & set(rels)) / len(rels) if rels else 0.0
    n = max(1, len(candidates))
    return {"ndcg@10": round(ndcg / n, 4), "recall@100": round(recall / n, 4)}


def score_all(retriever: Retriever, data: BeirSet) -> dict[str, dict[str, float]]:
    """Hybrid, BM25-only and dense-only from ONE set of candidate lists."""
    mix = collect_candidates(retriever, data, mode="mix")
    dense = {q: [lists[0]] for q, lists in mix.items()}
    sparse = {q: [lists[1]] for q, lists in mix.items()}
    return {
        "hybrid": score(retriever, data, mode="mix", candidates=mix),
        "bm25": score(retriever, data, mode="keyword", candidates=sparse),
        "dense": score(retriever, data, mode="vector", candidates=dense),
    }


@contextmanager
def scratch_index(
    settings: LibrarySettings, data: BeirSet, embedder: Any
) -> Iterator[tuple[Retriever, int, float]]:
    """Index ``data`` through the ingestion path into a throw-away local store;
    yields (retriever, chunk count, seconds spent indexing)."""
    encoder = Bm25Encoder(settings.bm25_params())
    with tempfile.TemporaryDirectory(prefix="leaflab-eval-") as tmp:
        store = open_store(settings, path=Path(tmp))
        try:
            store.ensure(embedder.dimension)
            started = time.perf_counter()
            chunks = build_index(
                data,
                embedder=embedder,
                encoder=encoder,
                store=store,
                max_tokens=settings.chunk_max_tokens,
            )
            indexed_s = time.perf_counter() - started
            retriever = Retriever(
                store=store, embedder=embedder, encoder=encoder, fusion=fusion_config(settings)
            )
            yield retriever, chunks, indexed_s
        finally:
            store.close()


def run_eval(
    root: Path,
    settings: LibrarySettings,
    *,
    limit_docs: int | None = None,
    limit_queries: int | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Index ``root`` in a throw-away local store and score hybrid, BM25-only
    and dense-only from that one index; one result dict (hybrid on top)."""
    data = load_beir(root, limit_docs=limit_docs, limit_queries=limit_queries)
    model = embedder_from_settings(settings)
    embedder = CachedEmbedder(cache_dir, model) if cache_dir else model
    with scratch_index(settings, data, embedder) as (retriever, chunks, indexed_s):
        started = time.perf_counter()
        figures = score_all(retriever, data)
        scored_s = time.perf_counter() - started
    return {
        "mode": "mix",
        **figures["hybrid"],
        "bm25": figures["bm25"],
        "dense": figures["dense"],
        "docs": len(data.corpus),
        "queries": len(data.queries),
        "chunks": chunks,
        "index_s": round(indexed_s, 1),
        "search_s": round(scored_s, 1),
    }
