"""SciFact nDCG@10 per retrieval backend and per embedding backend, one run.

For each embedding backend (torch = sentence-transformers, the reference;
onnx fp32; onnx int8, the default) the same SciFact slice is indexed through
the ingestion path (``services.library.beir``) into an embedded Edge store with
the background hnswlib index, and once that index holds every chunk the same
queries are scored with:

- dense exact  — Edge's exact filtered search (``EdgeStore.exact_dense``)
- dense hnsw   — the per-collection hnswlib graphs (the service's default)
- lexical      — BM25 sparse vectors (independent of the embedding backend)
- hybrid       — RRF of dense hnsw + lexical, the service's default ``mix``

Chunk vectors are cached per backend under --cache (keyed by model, window and
text), so a rerun re-scores without re-embedding. Keep the slice small on a
shared machine (defaults: 200 claims, 500 documents).

    .venv/bin/python -m bench.library_backends --data /work/shared/data/scifact \
        --limit-queries 200 --limit-docs 500
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from services.library.beir import BeirSet, collect_candidates, load_beir, score, scratch_index
from services.library.embedding import BACKENDS, CachedEmbedder, embedder_from_settings
from services.library.retrieval import Retriever
from services.library.settings import LibrarySettings
from services.library.store.base import Hit
from services.library.store.edge import EdgeStore


class ExactDense:
    """The same store with dense search forced to Edge's exact search."""

    def __init__(self, store: EdgeStore) -> None:
        self._store = store

    def search_dense(self, vector: list[float], *, collections: list[str], limit: int) -> list[Hit]:
        return self._store.exact_dense(vector, collections=collections, limit=limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _args() -> argparse.Namespace:
    home = Path(os.environ.get("LEAFLAB_HOME", "/tmp"))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="../shared/data/scifact")
    ap.add_argument("--limit-docs", type=int, default=500)
    ap.add_argument("--limit-queries", type=int, default=200)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--cache", default=str(home / "leaflab_embbench"))
    return ap.parse_args()


def _settled(store: EdgeStore, timeout_s: float = 600) -> None:
    """Wait until the hnsw graphs hold every stored chunk (no exact fallback left)."""
    assert store.ann is not None, "bench needs the hnsw dense index"
    deadline = time.monotonic() + timeout_s
    while store.ann.backlog or not store.ann.status().ready:
        if time.monotonic() > deadline:
            raise TimeoutError("the dense index did not catch up")
        time.sleep(0.1)


def _scores(retriever: Retriever, data: BeirSet) -> dict[str, float]:
    store = retriever.store
    assert isinstance(store, EdgeStore)
    _settled(store)
    mix = collect_candidates(retriever, data, mode="mix")
    exact = Retriever(
        store=ExactDense(store),  # type: ignore[arg-type]
        embedder=retriever.embedder,
        encoder=retriever.encoder,
        fusion=retriever.fusion,
    )
    exact_dense = collect_candidates(exact, data, mode="vector")
    return {
        "dense_exact": score(exact, data, mode="vector", candidates=exact_dense)["ndcg@10"],
        "dense_hnsw": score(
            retriever, data, mode="vector", candidates={q: [c[0]] for q, c in mix.items()}
        )["ndcg@10"],
        "lexical": score(
            retriever, data, mode="keyword", candidates={q: [c[1]] for q, c in mix.items()}
        )["ndcg@10"],
        "hybrid": score(retriever, data, mode="mix", candidates=mix)["ndcg@10"],
    }


def main() -> None:
    args = _args()
    settings = LibrarySettings(
        qdrant_url=None, qdrant_local_engine="edge", library_dense_index="hnsw"
    )
    data = load_beir(Path(args.data), limit_docs=args.limit_docs, limit_queries=args.limit_queries)
    rows = []
    for backend in args.backends.split(","):
        model = embedder_from_settings(settings, backend=backend)
        embedder = CachedEmbedder(Path(args.cache) / backend, model)
        with scratch_index(settings, data, embedder) as (retriever, chunks, index_s):
            row = {"embedding": backend, "chunks": chunks, "index_s": round(index_s, 1)}
            row.update(_scores(retriever, data))
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        "docs": len(data.corpus),
        "queries": len(data.queries),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
