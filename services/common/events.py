"""Job event streams in Redis (``leaflab:job:<id>``), read by the API's SSE endpoint.

``EventPublisher`` is the one way an event reaches a job's stream, and it checks
every event against ``services.common.contracts.events``: under ``LEAFLAB_ENV=test``
an unknown or malformed event raises (a test goes red where the emitter is), in
any other environment it is logged and published as it is (events are a view of
the job; dropping one would hide progress from its watchers for a typo).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import redis

from services.common.contracts.events import parse_event

log = logging.getLogger(__name__)

STREAM_MAXLEN = 10_000
STREAM_TTL_S = 7 * 24 * 3600


def stream_key(job_id: str) -> str:
    return f"leaflab:job:{job_id}"


class EventPublisher:
    """Appends typed events to a job's stream. Publishing never fails a job:
    events are a view, the ledger in Postgres is the record."""

    def __init__(self, client: redis.Redis, *, strict: bool | None = None) -> None:
        self._redis = client
        # LEAFLAB_ENV is CommonSettings.env, read here directly: each service has its own
        # settings class, and a publisher decides the same way in all of them.
        self._strict = os.environ.get("LEAFLAB_ENV") == "test" if strict is None else strict

    def publish(
        self, job_id: str, event_type: str, data: dict[str, Any], *, refresh_ttl: bool = True
    ) -> str | None:
        """Append one event; ``refresh_ttl`` False skips renewing the stream's expiry
        (a writer that renewed it moments ago saves the pipeline around the XADD)."""
        ids = self.publish_many(job_id, [(event_type, data)], refresh_ttl=refresh_ttl)
        return ids[-1] if ids else None

    def publish_many(
        self,
        job_id: str,
        events: list[tuple[str, dict[str, Any]]],
        *,
        refresh_ttl: bool = True,
    ) -> list[str]:
        """Append events in order in one round trip; their ids, or [] when Redis failed."""
        for kind, data in events:
            self._check(kind, data)
        key = stream_key(job_id)
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
            parse_event(event_type, data)
        except ValueError as exc:  # pydantic.ValidationError is one
            if self._strict:
                raise InvalidEvent(f"{event_type!r} event {data!r}: {exc}") from exc
            log.warning("publishing a %r event that breaks its contract: %s", event_type, exc)


class InvalidEvent(ValueError):
    """An event that is not in ``contracts.events`` (raised only by a strict publisher)."""


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
