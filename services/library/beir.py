"""`leaflab library eval`: index a BEIR set through the real chunk → embed → store
path in a scratch store and score retrieval (nDCG@10, recall@100)."""

from __future__ import annotations

import csv
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.library.chunking import chunk_blocks
from services.library.embedding import Embedder
from services.library.indexing import index_chunks
from services.library.lexical import Bm25Encoder
from services.library.retrieval import FusionConfig, Retriever
from services.library.settings import LibrarySettings
from services.library.store.base import VectorStore
from services.library.store.factory import open_store

SCRATCH = "eval:scratch"


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


def build_index(
    data: BeirSet, *, embedder: Embedder, encoder: Bm25Encoder, store: VectorStore, max_tokens: int
) -> int:
    total = 0
    for doc_id, (title, text) in data.corpus.items():
        blocks = [{"page": 1, "kind": "para", "text": text, "section": []}]
        chunks = chunk_blocks(blocks, paper=title or doc_id, max_tokens=max_tokens)
        total += index_chunks(
            chunks,
            document_id=doc_id,
            collection=SCRATCH,
            title=title,
            filename=None,
            embedder=embedder,
            encoder=encoder,
            store=store,
        )
    return total


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def score(retriever: Retriever, data: BeirSet, *, mode: str) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 over the queries (documents = best chunk)."""
    ids = list(data.queries)
    vectors = retriever.embedder.encode([data.queries[q] for q in ids])
    ndcg = recall = 0.0
    for qid, vector in zip(ids, vectors, strict=True):
        hits = retriever.search(
            data.queries[qid],
            collections=[SCRATCH],
            mode=mode,
            k=100,
            per_paper_cap=1,
            query_vector=vector,
        )
        ranked = [str(h.payload["document_id"]) for h in hits]
        rels = {d: r for d, r in data.qrels[qid].items() if r > 0}
        ndcg += ndcg_at(ranked, rels, 10)
        recall += len(set(ranked[:100]) & set(rels)) / len(rels) if rels else 0.0
    n = max(1, len(ids))
    return {"ndcg@10": round(ndcg / n, 4), "recall@100": round(recall / n, 4)}


def run_eval(
    root: Path,
    settings: LibrarySettings,
    *,
    mode: str = "mix",
    limit_docs: int | None = None,
    limit_queries: int | None = None,
) -> dict[str, Any]:
    """Index ``root`` in a throw-away local store and score it; one result dict."""
    data = load_beir(root, limit_docs=limit_docs, limit_queries=limit_queries)
    embedder = Embedder(
        model=settings.embedding_model,
        device=settings.embedding_device,
        batch_size=settings.embedding_batch_size,
        max_seq_length=settings.embedding_max_seq_length,
    )
    encoder = Bm25Encoder()
    with tempfile.TemporaryDirectory(prefix="leaflab-eval-") as tmp:
        store = open_store(settings, path=Path(tmp))
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
        fusion = FusionConfig(
            rrf_k=settings.rrf_k,
            dense_weight=settings.dense_weight,
            lexical_weight=settings.lexical_weight,
            candidates=200,
        )
        retriever = Retriever(store=store, embedder=embedder, encoder=encoder, fusion=fusion)
        metrics = score(retriever, data, mode=mode)
        store.close()
    return {
        "mode": mode,
        **metrics,
        "docs": len(data.corpus),
        "queries": len(data.queries),
        "chunks": chunks,
        "index_s": round(indexed_s, 1),
    }
