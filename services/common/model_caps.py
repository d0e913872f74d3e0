"""Endpoint capabilities in Redis, read the same way by the workers that discover
and write them and by the admin API (the key names: ``contracts/keys.py``).

One JSON record per (profile, model, hash of the profile's config), expiring with
the discovery's TTL; an index hash names each (profile, model)'s current record;
a refresh request is a timestamp that workers compare with their records'.
"""

from __future__ import annotations

import json
import time
from typing import Any

from redis import Redis

from services.common.contracts import keys


def index_field(profile: str, model: str) -> str:
    """A pair's field in ``keys.MODEL_CAPS_INDEX``."""
    return f"{profile}|{model}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_records(redis: Redis) -> list[dict[str, Any]]:
    """The current record of every (profile, model) a worker has published, sorted;
    an expired record is listed as ``{"profile", "model", "expired": True}``."""
    index = {_text(k): _text(v) for k, v in redis.hgetall(keys.MODEL_CAPS_INDEX).items()}
    found = []
    for field, key in sorted(index.items()):
        raw = redis.get(key)
        if raw is None:
            profile, _, model = field.partition("|")
            found.append({"profile": profile, "model": model, "expired": True})
            continue
        try:
            found.append(json.loads(raw))
        except ValueError:
            continue  # a torn write: the next discovery rewrites it
    return found


def refresh_requested_at(redis: Redis) -> float:
    raw = redis.get(keys.MODEL_CAPS_REFRESH)
    try:
        return float(_text(raw)) if raw is not None else 0.0
    except ValueError:
        return 0.0


def request_refresh(redis: Redis) -> float:
    """Ask every worker to rediscover now; returns the request's time."""
    now = time.time()
    redis.set(keys.MODEL_CAPS_REFRESH, repr(now))
    return now
