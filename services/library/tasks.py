"""The `library.ingest` Celery task and the consumer that runs it inside the
library service process.

Why in-process: an embedded store (Qdrant Edge / local mode) admits one process
per path, and the library service already holds it open for searches. So the
service consumes the `library` queue itself on a thread pool; parsing still
happens in a limited child process per document. With a Qdrant server, more
consumers can run elsewhere (`services.library.worker`) on the same task code.

Messages are acknowledged late (after the task returns) and rejected back to
the queue when a worker process is lost, so a crash mid-ingest leaves the
message for redelivery; the document lease and the sweeper cover a message
lost anyway (a broker restart, a visibility timeout far in the future).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.worker import WorkController

from services.common.contracts.tasks import LIBRARY_IMPORT_TASK, LIBRARY_INGEST_TASK, LIBRARY_QUEUE
from services.library.imports.run import run_import
from services.library.ingest import ingest_document
from services.library.runtime import LibraryRuntime

log = logging.getLogger(__name__)


def register_ingest_task(celery: Celery, get_runtime: Callable[[], LibraryRuntime]) -> None:
    @celery.task(
        name=LIBRARY_INGEST_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True
    )
    def ingest(document_id: str) -> str:
        return ingest_document(get_runtime(), document_id)

    @celery.task(
        name=LIBRARY_IMPORT_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True
    )
    def import_bibliography(import_id: str) -> str:
        return run_import(get_runtime(), import_id)


class EmbeddedConsumer:
    """A Celery worker for the `library` queue on a background thread."""

    def __init__(self, celery: Celery, *, concurrency: int) -> None:
        self.celery = celery
        self.concurrency = concurrency
        self._worker: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._worker = WorkController(
            app=self.celery,
            pool="threads",
            concurrency=self.concurrency,
            queues=[LIBRARY_QUEUE],
            hostname=f"library-embedded@{threading.get_native_id()}",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            loglevel="WARNING",
        )
        self._thread = threading.Thread(
            target=self._worker.start, name="library-consumer", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.stop(in_sighandler=False)
        if self._thread is not None:
            self._thread.join(timeout=15)
