"""Job event streams in Redis (``leaflab:job:<id>``), read by the API's SSE endpoint."""

from __future__ import annotations

import json
from typing import Any

import redis

STREAM_MAXLEN = 10_000
STREAM_TTL_S = 7 * 24 * 3600


def stream_key(job_id: str) -> str:
    return f"leaflab:job:{job_id}"


class EventPublisher:
    """Appends typed events to a job's stream. Publishing never fails a job:
    events are a view, the ledger in Postgres is the record."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def publish(
        self, job_id: str, event_type: str, data: dict[str, Any], *, refresh_ttl: bool = True
    ) -> str | None:
        """Append one event; ``refresh_ttl`` False skips renewing the stream's expiry
        (a writer that renewed it moments ago saves the pipeline around the XADD)."""
        key = stream_key(job_id)
        fields = {"type": event_type, "data": json.dumps(data, default=str)}
        try:
            if refresh_ttl:
                pipe = self._redis.pipeline(transaction=False)
                pipe.xadd(key, fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
                pipe.expire(key, STREAM_TTL_S)
                event_id = pipe.execute()[0]
            else:
                event_id = self._redis.xadd(key, fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
        except redis.RedisError:
            return None
        return event_id.decode() if isinstance(event_id, bytes) else str(event_id)


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
