"""SciFact retrieval figures: hybrid, BM25-only and dense-only from ONE index,
plus a fusion grid (RRF k, per-retriever weights, candidate depth) re-scored on
the same candidate lists.

Indexes through the real chunk → embed → store path (``services.library.beir``,
the code behind ``leaflab library eval``) with the library's settings defaults.
Chunk vectors are cached on disk (keyed by model, window and text), so a rerun
with other BM25 or fusion settings does not re-embed.

    .venv/bin/python bench/library_scifact.py --cache /tmp/irtune/emb_minilm
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.scifact_levers import lever_rows
from bench.scifact_lexical import lexical_rows
from services.library.beir import (
    Candidates,
    collect_candidates,
    load_beir,
    reweight,
    score,
    scratch_index,
)
from services.library.embedding import CachedEmbedder, embedder_from_settings
from services.library.retrieval import FusionConfig, Retriever, fusion_config
from services.library.settings import LibrarySettings

GRID_K = (10, 30, 60, 100)
GRID_WEIGHTS = ((1.0, 1.0), (1.0, 0.7), (0.7, 1.0), (1.0, 1.5), (1.5, 1.0))
GRID_DEPTH = (50, 100, 200)


def _args() -> argparse.Namespace:
    home = Path(os.environ.get("LEAFLAB_HOME", "/tmp"))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="../shared/data/scifact")
    ap.add_argument("--limit-docs", type=int, default=None)
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--cache", default=str(home / "leaflab_scifact_emb"))
    ap.add_argument("--k1", type=float, default=None, help="override bm25_k1")
    ap.add_argument("--b", type=float, default=None, help="override bm25_b")
    ap.add_argument("--avg-len", type=float, default=None, help="override bm25_avg_len")
    ap.add_argument("--title-weight", type=float, default=None, help="override title weight")
    ap.add_argument("--title-mode", choices=("repeat", "field"), default=None)
    ap.add_argument("--no-grid", action="store_true", help="only the three headline rows")
    ap.add_argument(
        "--levers", action="store_true", help="each retrieval lever, one at a time, same index"
    )
    ap.add_argument(
        "--lexical-levers",
        action="store_true",
        help="stemmer, stop words, k1/b (held-out halves), paper-level BM25, paper scoring",
    )
    return ap.parse_args()


def _settings(args: argparse.Namespace) -> LibrarySettings:
    overrides = {
        "bm25_k1": args.k1,
        "bm25_b": args.b,
        "bm25_avg_len": args.avg_len,
        "bm25_title_weight": args.title_weight,
        "bm25_title_mode": args.title_mode,
    }
    return LibrarySettings(qdrant_url=None, **{k: v for k, v in overrides.items() if v is not None})


def _cut(candidates: Candidates, depth: int, fusion: FusionConfig) -> Candidates:
    """The lists a store query with ``limit=depth`` returns (a ranked prefix)."""
    return {
        q: [(hits[:depth], w) for hits, w in reweight(lists, fusion)]
        for q, lists in candidates.items()
    }


def _grid(base: Retriever, data: Any, mix: Candidates) -> list[dict[str, Any]]:
    rows = []
    for depth in GRID_DEPTH:
        for rrf_k in GRID_K:
            for dense_w, lex_w in GRID_WEIGHTS:
                fusion = replace(
                    base.fusion, rrf_k=rrf_k, dense_weight=dense_w, lexical_weight=lex_w
                )
                retriever = Retriever(
                    store=base.store, embedder=base.embedder, encoder=base.encoder, fusion=fusion
                )
                figures = score(retriever, data, mode="mix", candidates=_cut(mix, depth, fusion))
                row = {"depth": depth, "rrf_k": rrf_k, "dense_w": dense_w, "lex_w": lex_w}
                rows.append({**row, **figures})
                print(json.dumps({"grid": rows[-1]}), flush=True)
    return rows


def main() -> None:
    args = _args()
    settings = _settings(args)
    data = load_beir(Path(args.data), limit_docs=args.limit_docs, limit_queries=args.limit_queries)
    embedder = CachedEmbedder(Path(args.cache), embedder_from_settings(settings))
    with scratch_index(settings, data, embedder) as (retriever, chunks, index_s):
        t1 = time.perf_counter()
        mix = collect_candidates(retriever, data, mode="mix")
        search_s = time.perf_counter() - t1
        head = {
            "hybrid": score(retriever, data, mode="mix", candidates=mix),
            "bm25": score(
                retriever, data, mode="keyword", candidates={q: [c[1]] for q, c in mix.items()}
            ),
            "dense": score(
                retriever, data, mode="vector", candidates={q: [c[0]] for q, c in mix.items()}
            ),
        }
        info = {
            "docs": len(data.corpus),
            "queries": len(data.queries),
            "chunks": chunks,
            "index_s": round(index_s, 1),
            "search_s": round(search_s, 1),
            "bm25": settings.bm25_params().__dict__,
            "fusion": asdict(fusion_config(settings)),
        }
        print(json.dumps({"info": info}), flush=True)
        for name, figures in head.items():
            print(json.dumps({"run": name, **figures}), flush=True)
        if args.levers:
            for row in lever_rows(retriever, data, mix):
                print(json.dumps({"lever": row}), flush=True)
        if args.lexical_levers:
            for row in lexical_rows(retriever, data, mix, settings.chunk_max_tokens):
                print(json.dumps({"lexical_lever": row}), flush=True)
        if not args.no_grid:
            rows = _grid(retriever, data, mix)
            best = max(rows, key=lambda r: r["ndcg@10"])
            print(json.dumps({"best_grid": best}), flush=True)


if __name__ == "__main__":
    main()
