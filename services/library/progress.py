"""Ingestion progress on the events stream: one Redis stream per document
(``leaflab:library:document:<id>``, the same ``{type, data}`` entries as job
streams, so ``services.common.events.decode_entry`` reads them).

Events: ``document.parsed`` {pages, chunks}, ``document.batch`` {done, total,
embedded, reused} after each stored batch, ``document.ready`` {chunks, pages,
embedded, reused, seconds, pages_per_s}, ``document.failed`` {reason}.
Publishing never fails an ingestion: events are a view, the row is the record.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from services.common.documents.streams import document_stream_key
from services.common.events import STREAM_MAXLEN, STREAM_TTL_S

__all__ = ["DocumentProgress", "document_stream_key"]


class DocumentProgress:
    def __init__(self, client: redis.Redis | None, document_id: str) -> None:
        self._redis = client
        self.document_id = document_id

    def publish(self, event_type: str, data: dict[str, Any]) -> None:
        if self._redis is None:
            return
        key = document_stream_key(self.document_id)
        body = {"document_id": self.document_id, **data}
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.xadd(
                key,
                {"type": event_type, "data": json.dumps(body, default=str)},
                maxlen=STREAM_MAXLEN,
                approximate=True,
            )
            pipe.expire(key, STREAM_TTL_S)
            pipe.execute()
        except redis.RedisError:
            return
