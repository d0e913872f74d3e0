"""Ingestion progress on the events stream: one Redis stream per document
(``keys.document_stream``, the same ``{type, data}`` entries as job streams, so
``services.common.events.decode_entry`` reads them).

The events are ``services.common.contracts.document_events``: ``document.parsed``
{pages, chunks}, ``document.batch`` {done, total, embedded, reused} after each
stored batch, ``document.ready`` {chunks, pages, embedded, reused, seconds,
pages_per_s}, ``document.failed`` {reason}, each with its ``document_id``. They go
through ``EventPublisher``, so each is checked against that union: under
``LEAFLAB_ENV=test`` a malformed one raises where it is published. Publishing never
fails an ingestion on a Redis error: events are a view, the row is the record.
"""

from __future__ import annotations

from typing import Any

import redis

from services.common.contracts import keys
from services.common.contracts.document_events import parse_document_event
from services.common.events import EventPublisher


class DocumentProgress:
    """One document's publisher (no Redis configured: publishing does nothing)."""

    def __init__(
        self, client: redis.Redis | None, document_id: str, *, strict: bool | None = None
    ) -> None:
        self._publisher = (
            None
            if client is None
            else EventPublisher(
                client, strict=strict, stream=keys.document_stream, parse=parse_document_event
            )
        )
        self.document_id = document_id

    def publish(self, event_type: str, data: dict[str, Any]) -> None:
        """Append one event (``data`` without the ``document_id``, added here);
        ``InvalidEvent`` from a strict publisher when the contract refuses it."""
        if self._publisher is not None:
            self._publisher.publish(
                self.document_id, event_type, {"document_id": self.document_id, **data}
            )
