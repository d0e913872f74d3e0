"""The ingestion pipeline for one document, under its lease:
(fetch, for URL documents) → parse → chunk → embed → store, recording each
status (queued, parsing, embedding, ready, failed + reason).

A bad document fails with a reason on its row; a lost lease stops quietly;
anything else (Postgres or the store away) propagates so the message is not
acknowledged and the sweeper retries the document once its lease expires.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.common.contracts.statuses import DocumentStatus
from services.common.documents.intake import PDF_MAGIC
from services.common.metrics import LIBRARY_INGEST_DURATION
from services.common.net_guard import AddressRefused
from services.library.chunking import chunk_blocks
from services.library.fetch import fetch_document
from services.library.indexing import BatchProgress, index_chunks
from services.library.lease import Claim, LeaseKeeper, LeaseLost, claim, fenced_set
from services.library.metadata.apply import metadata_values
from services.library.parsing.isolated import ParseFailed, parse_isolated
from services.library.progress import DocumentProgress
from services.library.references import record_references
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)


class DocumentUnusable(Exception):
    """The document cannot be ingested; ``str(exc)`` is the reason users see."""


def ingest_document(runtime: LibraryRuntime, document_id: str) -> str:
    """Run the pipeline if the lease can be taken; returns the outcome."""
    s = runtime.settings
    lease = claim(
        runtime.session_factory,
        uuid.UUID(document_id),
        ttl_s=s.ingest_lease_ttl_s,
        max_attempts=s.ingest_max_attempts,
    )
    if lease is None:  # done, in another worker's hands, or out of tries (the sweeper fails it)
        log.info("library.ingest: document %s not claimable, skipping", document_id)
        return "skipped"
    log.info(
        "library.ingest: document %s attempt %d by %s", document_id, lease.attempt, lease.owner
    )
    started = time.perf_counter()
    outcome = "failed"
    try:
        with LeaseKeeper(runtime.session_factory, lease, ttl_s=s.ingest_lease_ttl_s):
            outcome = _run(runtime, lease)
        return outcome
    except LeaseLost:
        outcome = "lease_lost"
        log.warning("library.ingest: document %s lease lost, stopping", document_id)
        return outcome
    except Exception as exc:
        outcome = "error"
        # The type only: exception texts can carry SQL parameters or document text.
        reason = f"attempt {lease.attempt} crashed ({type(exc).__name__})"
        log.error("library.ingest: document %s %s", document_id, reason)
        _release_for_retry(runtime, lease, reason)
        raise
    finally:
        LIBRARY_INGEST_DURATION.labels(outcome).observe(time.perf_counter() - started)


def _release_for_retry(runtime: LibraryRuntime, lease: Claim, reason: str) -> None:
    """Note why the attempt stopped and let the lease lapse now, so the sweeper retries soon."""
    try:
        fenced_set(runtime.session_factory, lease, error=reason, lease_until=datetime.now(UTC))
    except Exception:  # Postgres away or lease gone: the lease expires by itself
        log.warning("library.ingest: could not release document %s", lease.document_id)


def _run(runtime: LibraryRuntime, lease: Claim) -> str:
    events = DocumentProgress(runtime.redis, str(lease.document_id))
    started = time.perf_counter()
    try:
        path = _local_file(runtime, lease)
        parsed = _parse(runtime, lease, path)
    except DocumentUnusable as exc:
        log.warning("library.ingest: document %s failed: %s", lease.document_id, exc)
        fenced_set(runtime.session_factory, lease, status=DocumentStatus.FAILED, error=str(exc))
        events.publish("document.failed", {"reason": str(exc)})
        return "failed"
    extracted = parsed.get("metadata") or {}
    structure = {k: v for k, v in parsed["structure"].items() if k != "references"}
    structure["references"] = parsed["structure"]["references"][:500]
    for extra in ("abstract", "pmid"):
        if extracted.get(extra):
            structure[extra] = extracted[extra]
    # Authors, year, venue, identifiers (extracted, then looked up in OpenAlex /
    # Crossref, which never fails the document); manual corrections kept;
    # duplicates marked.
    meta = metadata_values(
        runtime.session_factory,
        lease.document_id,
        extracted,
        parsed_title=parsed.get("title"),
        filename=lease.filename,
        lookup=runtime.metadata_lookup,
    )
    title = meta.pop("title", None) or parsed.get("title") or lease.filename or "untitled"
    fenced_set(
        runtime.session_factory,
        lease,
        status=DocumentStatus.EMBEDDING,
        title=title,
        pages=parsed["pages"],
        structure=structure,
        **meta,
    )
    # Title and DOI are stored: link references both ways (services/library/references.py).
    record_references(
        runtime.session_factory,
        document_id=lease.document_id,
        references=parsed["structure"]["references"],
    )
    document_id = str(lease.document_id)
    runtime.store.delete_document(document_id)  # a retry replaces, never duplicates
    chunks = chunk_blocks(
        parsed["blocks"], paper=title, max_tokens=runtime.settings.chunk_max_tokens
    )
    events.publish("document.parsed", {"pages": parsed["pages"], "chunks": len(chunks)})

    def on_batch(p: BatchProgress) -> None:
        reused = p.done - p.embedded
        events.publish(
            "document.batch",
            {"done": p.done, "total": p.total, "embedded": p.embedded, "reused": reused},
        )

    # Vectors come from the hash cache where the text was embedded before
    # (a crashed attempt, another collection): a retry re-embeds nothing stored.
    tally = index_chunks(
        chunks,
        document_id=document_id,
        collection=lease.collection,
        title=title,
        filename=lease.filename,
        embedder=runtime.chunk_embedder,
        encoder=runtime.encoder,
        store=runtime.store,
        batch=runtime.settings.embedding_batch_size * 2,
        progress=on_batch,
    )
    fenced_set(runtime.session_factory, lease, status=DocumentStatus.READY, chunks=tally.done)
    seconds = time.perf_counter() - started
    summary = {
        "chunks": tally.done,
        "pages": parsed["pages"],
        "embedded": tally.embedded,
        "reused": tally.done - tally.embedded,
        "seconds": round(seconds, 2),
        "pages_per_s": round(parsed["pages"] / max(seconds, 1e-6), 2),
    }
    events.publish("document.ready", summary)
    log.info(
        "library.ingest: document %s ready (%d chunks, %d embedded, %d reused)",
        document_id,
        tally.done,
        tally.embedded,
        tally.done - tally.embedded,
    )
    return "ready"


def _local_file(runtime: LibraryRuntime, lease: Claim) -> Path:
    """The stored PDF, fetched first for a URL document that has none yet."""
    path = runtime.blobs.path(lease.content_hash)
    if path.exists():
        return path
    if not lease.source_url:
        raise DocumentUnusable("the uploaded file is missing from the file store")
    s = runtime.settings
    try:
        fetch_document(
            lease.source_url,
            store=runtime.blobs,
            key=lease.content_hash,
            guard=runtime.net_guard,
            max_bytes=s.max_upload_bytes,
            timeout_s=s.url_fetch_timeout_s,
        )
    except AddressRefused as exc:
        raise DocumentUnusable(f"cannot fetch the URL: {exc}") from None
    with path.open("rb") as fh:
        if not fh.read(1024).lstrip()[:5].startswith(PDF_MAGIC):
            path.unlink(missing_ok=True)
            raise DocumentUnusable("the URL did not return a PDF (no %PDF- header)")
    return path


def _parse(runtime: LibraryRuntime, lease: Claim, path: Path) -> dict[str, Any]:
    try:
        return parse_isolated(path, runtime.parse_limits)
    except ParseFailed as exc:
        # Parser messages may quote the file's location; users see their file name.
        reason = str(exc).replace(str(path), lease.filename or "the file")
        reason = reason.replace(str(runtime.blobs.root), "<library>")
        raise DocumentUnusable(reason) from None
