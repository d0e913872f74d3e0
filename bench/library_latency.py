"""Hybrid search latency over a synthetic 50k-chunk library (Qdrant Edge, local),
plus parse+chunk throughput on the shared PDFs.

    .venv/bin/python bench/library_latency.py --chunks 50000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from services.library.chunking import chunk_blocks
from services.library.lexical import Bm25Encoder
from services.library.parsing.isolated import ParseLimits, parse_isolated
from services.library.retrieval import Retriever
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

WORDS = (
    "flow energy theorem lemma proof corpus retrieval embedding summary citation "
    "manifold curvature gradient dataset model paper section equation bound"
).split()


def parse_throughput(pdf_dir: Path) -> dict[str, float]:
    pages = chunks = 0
    t0 = time.perf_counter()
    for pdf in sorted(pdf_dir.glob("*.pdf")):
        parsed = parse_isolated(pdf, ParseLimits())
        pages += parsed["pages"]
        chunks += len(chunk_blocks(parsed["blocks"], paper=pdf.name, max_tokens=220))
    secs = time.perf_counter() - t0
    return {
        "pages": pages,
        "chunks": chunks,
        "seconds": round(secs, 1),
        "pages_per_s": round(pages / secs, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    print(json.dumps({"parse": parse_throughput(Path("../shared/data/pdfs"))}), flush=True)
    rng = np.random.default_rng(0)
    encoder = Bm25Encoder()
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeStore(Path(tmp) / "edge")
        store.ensure(384)
        t0 = time.perf_counter()
        for start in range(0, args.chunks, 1000):
            batch = []
            for i in range(start, min(start + 1000, args.chunks)):
                text = " ".join(rng.choice(WORDS, 60)) + f" doc{i // 40}"
                vec = rng.standard_normal(384).astype(np.float32)
                batch.append(
                    StoredChunk(
                        str(uuid.uuid4()),
                        (vec / np.linalg.norm(vec)).tolist(),
                        encoder.encode_document(text),
                        {
                            "collection": f"project:{i % 5}",
                            "document_id": f"d{i // 40}",
                            "text": text,
                            "locator": f"doc{i // 40} | p. 1",
                            "kind": "para",
                        },
                    )
                )
            store.upsert(batch)
        upsert_s = time.perf_counter() - t0
        retriever = Retriever(store=store, embedder=None, encoder=encoder)  # type: ignore[arg-type]
        lat = []
        for _ in range(args.queries):
            q = " ".join(rng.choice(WORDS, 6))
            vec = rng.standard_normal(384).astype(np.float32)
            t1 = time.perf_counter()
            retriever.search(
                q,
                collections=["project:0", "project:1"],
                mode="mix",
                k=10,
                query_vector=vec / np.linalg.norm(vec),
            )
            lat.append((time.perf_counter() - t1) * 1000)
        print(
            json.dumps(
                {
                    "store": "qdrant-edge (no HNSW optimize)",
                    "chunks": args.chunks,
                    "upsert_s": round(upsert_s, 1),
                    "hybrid_p50_ms": round(float(np.percentile(lat, 50)), 2),
                    "hybrid_p95_ms": round(float(np.percentile(lat, 95)), 2),
                }
            ),
            flush=True,
        )
        store.close()


if __name__ == "__main__":
    main()
