"""Per-key request rate limits: one token bucket per API key, kept in Redis.

Every API process runs the same Lua script against the same Redis key, so
the bucket is shared by all of them: adding API replicas does not multiply a
key's allowance. Redis runs a script atomically and the script reads the
clock from Redis itself (``TIME``), so API hosts with skewed clocks still
agree. A refused request gets 429 with ``Retry-After`` (whole seconds until
one token is back).

If Redis cannot answer, requests are let through (and the failure is put on
the request's span): an outage of the limiter must not become an outage of
the API.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass

import redis
from opentelemetry import trace

log = logging.getLogger(__name__)

BUCKET_KEY = "leaflab:ratelimit:{key_id}"

# KEYS[1] bucket; ARGV rate (tokens/s), burst (capacity).
# Returns {allowed (0/1), seconds until a token is back (string: Lua numbers
# become integers on the way out)}.
BUCKET_SCRIPT = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate)
end
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(wait)}
"""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: int  # whole seconds, ≥ 1 when refused


class TokenBucket:
    """A key's bucket: ``rate`` requests per second on average, up to ``burst`` at once."""

    def __init__(self, client: redis.Redis, *, rate_per_s: float, burst: int) -> None:
        self._script = client.register_script(BUCKET_SCRIPT)
        self.rate = rate_per_s
        self.burst = max(1, burst)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key_id: uuid.UUID) -> Decision:
        """Take one token for ``key_id``; refused when the bucket is empty."""
        if not self.enabled:
            return Decision(True, 0)
        try:
            allowed, wait = self._script(
                keys=[BUCKET_KEY.format(key_id=key_id)], args=[self.rate, self.burst]
            )
        except redis.RedisError as exc:
            log.warning("rate limiter unavailable, request let through: %s", type(exc).__name__)
            trace.get_current_span().add_event("rate_limit_unavailable")
            return Decision(True, 0)
        if int(allowed) == 1:
            return Decision(True, 0)
        return Decision(False, max(1, math.ceil(float(wait))))
