"""Event streams in Redis (a job's, ``keys.job_stream``; a library document's,
``keys.document_stream``), read by the API's SSE endpoints.

``EventPublisher`` is the one way an event reaches a stream, and it checks every
event against its stream's contract (``services.common.contracts.events`` for a
job's, ``contracts.document_events`` for a document's): under ``LEAFLAB_ENV=test``
an unknown or malformed event raises (a test goes red where the emitter is), in
any other environment it is logged and published as it is (events are a view of
the job; dropping one would hide progress from its watchers for a typo).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

import redis

from services.common.contracts import keys
from services.common.contracts.events import parse_event

log = logging.getLogger(__name__)

STREAM_MAXLEN = 10_000
STREAM_TTL_S = 7 * 24 * 3600


class EventPublisher:
    """Appends typed events to a job's stream (or, given ``stream`` and ``parse``,
    another subject's). Publishing never fails a job: events are a view, the ledger
    in Postgres is the record.

    ``stream`` names the subject's stream from its id; ``parse`` is the contract,
    raising ``ValueError`` for an event that breaks it."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        strict: bool | None = None,
        stream: Callable[[str], str] = keys.job_stream,
        parse: Callable[[str, dict[str, Any]], object] = parse_event,
    ) -> None:
        self._redis = client
        self._stream = stream
        self._parse = parse
        # LEAFLAB_ENV is CommonSettings.env, read here directly: each service has its own
        # settings class, and a publisher decides the same way in all of them.
        self._strict = os.environ.get("LEAFLAB_ENV") == "test" if strict is None else strict

    def publish(
        self, subject_id: str, event_type: str, data: dict[str, Any], *, refresh_ttl: bool = True
    ) -> str | None:
        """Append one event; ``refresh_ttl`` False skips renewing the stream's expiry
        (a writer that renewed it moments ago saves the pipeline around the XADD)."""
        ids = self.publish_many(subject_id, [(event_type, data)], refresh_ttl=refresh_ttl)
        return ids[-1] if ids else None

    def publish_many(
        self,
        subject_id: str,
        events: list[tuple[str, dict[str, Any]]],
        *,
        refresh_ttl: bool = True,
    ) -> list[str]:
        """Append events in order in one round trip; their ids, or [] when Redis failed."""
        for kind, data in events:
            self._check(kind, data)
        key = self._stream(subject_id)
        entries = [{"type": kind, "data": json.dumps(data, default=str)} for kind, data in events]
        try:
            if len(entries) == 1 and not refresh_ttl:
                ids = [self._redis.xadd(key, entries[0], maxlen=STREAM_MAXLEN, approximate=True)]  # type: ignore[arg-type]
            else:
                pipe = self._redis.pipeline(transaction=False)
                for fields in entries:
                    pipe.xadd(key, fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
                if refresh_ttl:
                    pipe.expire(key, STREAM_TTL_S)
                ids = pipe.execute()[: len(entries)]
        except redis.RedisError:
            return []
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    def _check(self, event_type: str, data: dict[str, Any]) -> None:
        try:
            self._parse(event_type, data)
        except ValueError as exc:  # pydantic.ValidationError is one
            if self._strict:
                raise InvalidEvent(f"{event_type!r} event {data!r}: {exc}") from exc
            log.warning("publishing a %r event that breaks its contract: %s", event_type, exc)


class InvalidEvent(ValueError):
    """An event its stream's contract refuses (raised only by a strict publisher)."""


def decode_entry(entry_id: Any, fields: dict[Any, Any]) -> dict[str, Any]:
    """Turn a raw XREAD entry into ``{id, type, data}``."""

    def _s(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    decoded = {_s(k): _s(v) for k, v in fields.items()}
    return {
        "id": _s(entry_id),
        "type": decoded.get("type", "message"),
        "data": json.loads(decoded.get("data", "{}")),
    }
