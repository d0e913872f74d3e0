"""A fetched PDF into the job's library: the API upload route's intake, from a tool.

The bytes go into the shared content-addressed store, the document row is
registered (queued) in the job's project collection — or the user's own when
the job has no project — and committed before ``library.ingest`` is sent, so
the task always finds its row. The same content in the same collection is the
same document, so running this again (a retried or resumed tool call) adds
nothing twice. Without an ingest queue the library's sweeper still picks the
queued row up after its requeue delay.
"""

from __future__ import annotations

import uuid

from celery import Celery

from services.common.contracts.collections import Collection
from services.common.contracts.tasks import send_ingest
from services.common.documents.admission import AdmissionFailed, Admitted, admit_document
from services.common.documents.blobs import BlobStore
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.ports import IngestQueue


class CeleryIngestQueue:
    """Sends ``library.ingest`` by name to the library queue."""

    def __init__(self, celery: Celery) -> None:
        self._celery = celery

    def queue_ingest(self, document_id: str) -> None:
        send_ingest(self._celery, document_id)


def add_pdf_to_library(
    data: bytes,
    *,
    filename: str,
    source_url: str,
    ctx: ToolContext,
    store: BlobStore,
    queue: IngestQueue | None,
) -> Admitted:
    """Store, register and queue ``data`` (a PDF) in the job's collection."""
    if ctx.db is None:
        raise ToolError("library_unconfigured", "this worker has no database for the library")
    if ctx.project_id:
        collection = Collection.project(uuid.UUID(ctx.project_id))
    else:
        collection = Collection.personal(uuid.UUID(ctx.user_id))
    key = store.put(data)
    try:
        return admit_document(
            ctx.db,
            queue.queue_ingest if queue is not None else None,
            content_hash=key,
            filename=filename,
            collection=collection,
            owner_id=uuid.UUID(ctx.user_id),
            source_url=source_url,
        )
    except AdmissionFailed as exc:
        # A conflict: another call registered the same file at this moment, and the
        # next try finds it. Gone: the project was deleted under the job.
        raise ToolError(exc.code, exc.message, retryable=exc.code == "conflict") from None
