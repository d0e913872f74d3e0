"""Hybrid search as the store grows: p50/p95 of `GET /search`'s work (query
embedding with the configured backend + dense + BM25 + fusion) at N chunks,
memory and disk per million chunks, with the query embedding alone measured in
the same run as the baseline.

Dense search goes through the library's background HNSW index (hnswlib graphs
per collection, ``--dense-index hnsw``, the default) or Edge's exact filtered
search (``store``); the same run also times, per query, the dense list alone,
Edge's exact dense search (the baseline the index replaces), the BM25 list
alone, and the dense recall@10 of the index against exact search. While the
chunks are stored and indexed, a ticker thread records the longest stall of
the Python process (the index builds with the GIL released; Edge's own
``optimize()`` would hold it for the whole build).

Chunks: real SciFact chunk texts (BM25 as ingestion encodes them), cycled to N;
dense vectors are real embeddings of a base sample of those texts plus small
noise (σ 0.02, renormalised) — so neighbours are realistic without embedding N
texts on a CPU. Queries are real SciFact claims, embedded per search. Chunks
are spread over ``--projects`` collections; each search is scoped to 3 (the
payload filter on ``collection``).

    .venv/bin/python -m bench.library_scale --chunks 50000 --queries 100
    .venv/bin/python -m bench.library_scale --chunks 1000000   # long
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from bench.process_memory import rss_by_file, rss_mb
from bench.store_pages import release_pages, release_then_search
from services.library.beir import document_chunks, load_beir
from services.library.embedding import embedder_from_settings
from services.library.indexing import embed_text
from services.library.lexical import Bm25Encoder
from services.library.retrieval import Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store import open_store
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

SHARED = Path(
    os.environ.get("LEAFLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def _per_million(delta: dict[str, float], per_million: float) -> dict[str, int]:
    return {f: round(v * per_million) for f, v in delta.items()}


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_size) for p in folder.iterdir() if p.is_file()}


def _written_bytes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> int:
    """Bytes a save wrote: whole files that are new (a rewrite makes new inodes),
    the growth of files appended to."""
    total = 0
    for name, (inode, size) in after.items():
        old = before.get(name)
        total += size if old is None or old[0] != inode else max(0, size - old[1])
    return total


def _wait_for(check: Any, timeout_s: float = 600) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _periodic_save(
    store: Any, args: argparse.Namespace, batch: list[StoredChunk]
) -> dict[str, Any]:
    """What one periodic save writes after ``batch`` is stored: the builder's save
    interval is cut to 0.5 s, a first save is awaited, the batch stored and
    indexed, and the bytes the next save writes are counted."""
    ann = getattr(store, "ann", None)
    if ann is None:
        return {}
    folder = Path(store.index_folder)
    ann.params = dataclasses.replace(ann.params, save_interval_s=0.5)
    clean = folder / "clean"
    if not _wait_for(clean.exists):
        return {"error": "no first save"}
    before = _files(folder)
    t0 = time.perf_counter()
    store.upsert(batch)
    _wait_indexed(store)
    saved = _wait_for(clean.exists)
    return {
        "points_added": len(batch),
        "saved": saved,
        "bytes_written": _written_bytes(before, _files(folder)) if saved else None,
        "full_save_bytes": sum(size for _, size in before.values()),
        "added_and_saved_s": round(time.perf_counter() - t0, 1),
    }


def disk_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


def _pcts(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


class StallMeter:
    """The longest gap between 10 ms ticks of a Python thread: how long the GIL was held."""

    def __init__(self) -> None:
        self.longest_ms = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(0.01):
            now = time.perf_counter()
            self.longest_ms = max(self.longest_ms, (now - last) * 1000 - 10)
            last = now

    def __enter__(self) -> StallMeter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _wait_indexed(store: object) -> None:
    ann = getattr(store, "ann", None)
    while ann is not None and ann.backlog:
        time.sleep(0.2)


def _load(
    store: Any,
    args: argparse.Namespace,
    flat: list[Any],
    base: np.ndarray,
    sparse: list[Any],
    rng: np.random.Generator,
    start: int = 0,
    count: int | None = None,
) -> list[StoredChunk]:
    """Store ``args.chunks`` chunks: SciFact texts cycled, base vectors plus noise
    (with ``count``: that many from ``start``, returned and not stored)."""
    batch: list[StoredChunk] = []
    for i in range(start, start + (args.chunks if count is None else count)):
        doc_id, title, chunk = flat[i % len(flat)]
        vector = base[i % len(base)] + np.asarray(
            rng.normal(0, 0.02, base.shape[1]), dtype=np.float32
        )
        vector /= np.linalg.norm(vector)
        copy = i // len(flat)
        payload = {
            "collection": f"project:{i % args.projects}",
            "document_id": f"{copy}:{doc_id}",
            "title": title,
            "locator": chunk.locator,
            "page": chunk.page,
            "section": chunk.section,
            "kind": chunk.kind,
            "ordinal": chunk.ordinal,
            "text": chunk.text,
        }
        batch.append(
            StoredChunk(str(uuid.uuid4()), vector.tolist(), sparse[i % len(flat)], payload)
        )
        if len(batch) == 2000 and count is None:
            store.upsert(batch)
            batch = []
    if batch and count is None:
        store.upsert(batch)
    return batch


def _restart(store: Any, settings: LibrarySettings, root: Path, dimension: int) -> dict[str, Any]:
    """Close (which saves the dense index) and reopen: how long each takes, and
    whether the reopened store answers from the loaded index at once."""
    t0 = time.perf_counter()
    store.close()
    close_s = time.perf_counter() - t0
    folder = root / "edge-dense-index"
    file_mb = disk_mb(folder) if folder.exists() else 0.0
    t1 = time.perf_counter()
    reopened = open_store(settings, path=root)
    reopened.ensure(dimension)
    open_s = time.perf_counter() - t1
    status = reopened.dense_index_status() or {}
    reopened.close()
    return {
        "close_and_save_s": round(close_s, 1),
        "reopen_s": round(open_s, 1),
        "origin": status.get("origin"),
        "ready_at_open": status.get("ready"),
        "dense_index_file_mb": round(file_mb, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--projects", type=int, default=10)
    ap.add_argument("--base", type=int, default=256, help="texts really embedded")
    ap.add_argument("--limit-docs", type=int, default=None)
    ap.add_argument("--data", default=str(SHARED / "scifact"))
    ap.add_argument(
        "--optimize", action="store_true", help="also run Edge's own optimize() (holds the GIL)"
    )
    ap.add_argument("--dense-index", choices=["hnsw", "store"], default="hnsw")
    ap.add_argument(
        "--dense-datatype",
        choices=["float16", "float32"],
        default=None,
        help="the store's dense vectors (default: the service's setting)",
    )
    ap.add_argument(
        "--save-batch", type=int, default=1000, help="chunks stored before the periodic save"
    )
    args = ap.parse_args()

    chosen = {"library_store_dense_datatype": args.dense_datatype} if args.dense_datatype else {}
    # No periodic release: the bench releases at set points (store_pages.py).
    settings = LibrarySettings(
        qdrant_url=None,
        library_dense_index=args.dense_index,
        library_release_store_pages_s=0,
        **chosen,
    )
    data = load_beir(Path(args.data), limit_docs=args.limit_docs)
    docs = document_chunks(data, max_tokens=settings.chunk_max_tokens)
    flat = [(doc_id, title, c) for doc_id, title, chunks in docs for c in chunks]
    encoder = Bm25Encoder(settings.bm25_params())
    sparse = [encoder.encode_document(c.text, title=t) for _, t, c in flat]
    embedder = embedder_from_settings(settings)
    base = embedder.encode([embed_text(c, t) for _, t, c in flat[: args.base]])
    rng = np.random.default_rng(7)
    queries = list(data.queries.values())[: args.queries]

    with tempfile.TemporaryDirectory(prefix="leaflab-bench-scale-") as tmp:
        store = open_store(settings, path=Path(tmp))
        store.ensure(embedder.dimension)
        rss0 = {f: rss_mb(f) for f in ("VmRSS", "RssAnon", "RssFile")}
        t0 = time.perf_counter()
        with StallMeter() as stall:
            _load(store, args, flat, base, sparse, rng)
            upsert_s = time.perf_counter() - t0
            _wait_indexed(store)
            indexed_s = time.perf_counter() - t0
        optimize_s = None
        if args.optimize:
            t1 = time.perf_counter()
            store.optimize()
            optimize_s = round(time.perf_counter() - t1, 1)
        rss_delta = {f: rss_mb(f) - rss0[f] for f in rss0}
        by_file = rss_by_file(Path(tmp) / "edge")
        released = release_pages(Path(tmp) / "edge", "unmap")
        rss_released = {f: rss_mb(f) - rss0[f] for f in rss0}
        on_disk = disk_mb(Path(tmp))
        retriever = Retriever(
            store=store, embedder=embedder, encoder=encoder, fusion=fusion_config(settings)
        )
        scope = [f"project:{p}" for p in range(min(3, args.projects))]
        for _ in range(5):
            retriever.search("warm-up query", collections=scope, mode="mix", k=10)
        full_ms, embed_ms, dense_ms, exact_ms, sparse_ms, recall = [], [], [], [], [], []
        depth = settings.fusion_candidates
        for q in queries:
            t2 = time.perf_counter()
            retriever.search(q, collections=scope, mode="mix", k=10)
            full_ms.append((time.perf_counter() - t2) * 1000)
            t3 = time.perf_counter()
            vector = embedder.encode_query(q).tolist()
            embed_ms.append((time.perf_counter() - t3) * 1000)
            t4 = time.perf_counter()
            dense = store.search_dense(vector, collections=scope, limit=depth)
            dense_ms.append((time.perf_counter() - t4) * 1000)
            t5 = time.perf_counter()
            store.search_sparse(encoder.encode_query(q), collections=scope, limit=depth)
            sparse_ms.append((time.perf_counter() - t5) * 1000)
            if isinstance(store, EdgeStore):
                t6 = time.perf_counter()
                exact = store.exact_dense(vector, collections=scope, limit=depth)
                exact_ms.append((time.perf_counter() - t6) * 1000)
                truth = {h.id for h in exact[:10]}
                recall.append(len(truth & {h.id for h in dense[:10]}) / max(1, len(truth)))

        # The exact baseline above read every in-scope vector back in: release again
        # (each mode in turn), then the service's own path alone, timed, and what it
        # maps again.
        def searches_ms() -> list[float]:
            times = []
            for q in queries:
                t7 = time.perf_counter()
                retriever.search(q, collections=scope, mode="mix", k=10)
                times.append((time.perf_counter() - t7) * 1000)
            return times

        per_million = 1_000_000 / max(1, args.chunks)
        by_mode = release_then_search(Path(tmp) / "edge", searches_ms, rss0, per_million)
        extra = _load(
            store, args, flat, base, sparse, rng, start=args.chunks, count=args.save_batch
        )
        periodic = _periodic_save(store, args, extra)
        restart = _restart(store, settings, Path(tmp), embedder.dimension)
    print(
        json.dumps(
            {
                "store": f"library default ({settings.qdrant_local_engine})",
                "dense_index": args.dense_index,
                "backend": settings.embedding_backend,
                "chunks": args.chunks,
                "distinct_texts": len(flat),
                "projects": args.projects,
                "scope_projects": len(scope),
                "queries": len(queries),
                "upsert_s": round(upsert_s, 1),
                "stored_and_indexed_s": round(indexed_s, 1),
                "longest_python_stall_ms": round(stall.longest_ms),
                "optimize_s": optimize_s,
                "rss_mb_per_million": round(rss_delta["VmRSS"] * per_million),
                "rss_anon_mb_per_million": round(rss_delta["RssAnon"] * per_million),
                "rss_file_mb_per_million": round(rss_delta["RssFile"] * per_million),
                # The store's resident file pages by file kind, after the load and
                # after the page release and the queries (what searches map again).
                "rss_store_files_mb_per_million": _per_million(by_file, per_million),
                "dense_datatype": getattr(settings, "library_store_dense_datatype", "float32"),
                "rss_after_page_release": _per_million(rss_released, per_million)
                if released is not None
                else None,
                # Per release mode (unmap: main's; drop: the page cache too), after the
                # release and after the queries ran on (what they map again): the RSS
                # per million, the store's file pages by kind, and the searches' times.
                "after_page_release": by_mode,
                "disk_mb_per_million": round(on_disk * per_million),
                "hybrid_with_query_embedding": _pcts(full_ms),
                "baseline_query_embedding_only": _pcts(embed_ms),
                # The same three parts one after another (the search before its lexical
                # list ran beside the embedding and dense search): per query, this run.
                "baseline_parts_in_sequence": _pcts(
                    [e + d + s for e, d, s in zip(embed_ms, dense_ms, sparse_ms, strict=True)]
                ),
                "dense_list": _pcts(dense_ms),
                "baseline_exact_dense_list": _pcts(exact_ms) if exact_ms else None,
                "dense_recall_at_10": round(float(np.mean(recall)), 3) if recall else None,
                "bm25_list": _pcts(sparse_ms),
                "periodic_save": periodic,
                "restart": {
                    **restart,
                    "dense_index_file_mb_per_million": round(
                        float(restart["dense_index_file_mb"]) * per_million
                    ),
                },
                "load_average": round(os.getloadavg()[0], 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
