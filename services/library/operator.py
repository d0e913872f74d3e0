"""What the library offers operators outside the HTTP service (the `leaflab`
CLI calls these instead of reaching into the library's internals).

``claim_encoder`` hands the library's embedder to `leaflab library check-claims`
(the checker itself is services.common.claims).

``run_eval`` scores retrieval on a BEIR folder in a throw-away local index. It
is a local computation over files on the operator's machine, not a request to
a running service: it must not touch the lab's library, so there is no HTTP
route for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_eval(
    directory: Path,
    *,
    limit_docs: int | None = None,
    limit_queries: int | None = None,
    embedding_cache: Path | None = None,
) -> dict[str, Any]:
    """Hybrid nDCG@10 / recall@100 on top, BM25-only and dense-only under "bm25"
    and "dense"; raises FileNotFoundError for a folder that is not a BEIR set."""
    # Imported here: the models and the store are heavy, and `leaflab --help` is not.
    from services.library.beir import run_eval as _run_eval
    from services.library.settings import LibrarySettings

    return _run_eval(
        directory,
        LibrarySettings(qdrant_url=None),
        limit_docs=limit_docs,
        limit_queries=limit_queries,
        cache_dir=embedding_cache,
    )


def claim_encoder() -> Any | None:
    """The library's configured embedder (LEAFLAB_EMBEDDING_* settings, the packaged
    MiniLM by default) as the claim checker's ``encode(texts)``, or None when its
    model or runtime cannot be loaded here: the checker then runs lexical-only and
    its verdicts say so. Nothing is downloaded."""
    import logging

    try:
        from services.library.embedding import embedder_from_settings
        from services.library.settings import LibrarySettings

        return embedder_from_settings(LibrarySettings(qdrant_url=None))
    except Exception as exc:  # noqa: BLE001 - any load failure means "run without it"
        logging.getLogger(__name__).warning("claim check runs without embeddings: %s", exc)
        return None
