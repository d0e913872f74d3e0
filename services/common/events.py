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

    def publish(self, job_id: str, event_type: str, data: dict[str, Any]) -> str | None:
        key = stream_key(job_id)
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.xadd(
                key,
                {"type": event_type, "data": json.dumps(data, default=str)},
                maxlen=STREAM_MAXLEN,
                approximate=True,
            )
            pipe.expire(key, STREAM_TTL_S)
            result = pipe.execute()
        except redis.RedisError:
            return None
        event_id = result[0]
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
