"""Request rate limits: token buckets in Redis per API key, per user and per project.

A request takes one token from each bucket that applies — its key's, its
user's (every key of that user together: N keys never give N× the allowance)
and, for a key scoped to a project, that project's (every member together) —
or from none of them: the script checks them all and takes only when each has
a token, so a refusal by one bucket costs nothing in the others.

Every API process runs the same Lua script against the same Redis keys, so the
buckets are shared by all of them: adding API replicas does not multiply an
allowance. Redis runs a script atomically and the script reads the clock from
Redis itself (``TIME``), so API hosts with skewed clocks still agree. A refused
request gets 429 with ``Retry-After`` (whole seconds until the emptiest
bucket has a token again) and a message naming which limit it hit.

If Redis cannot answer, requests are let through (and the failure is put on
the request's span): an outage of the limiter must not become an outage of
the API.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from opentelemetry import trace

from services.api.api_keys import Caller
from services.api.settings import ApiSettings
from services.common.contracts import keys

log = logging.getLogger(__name__)

# KEYS: the buckets; ARGV: rate (tokens/s) and burst (capacity) of each, in turn.
# Returns {index of the refusing bucket (0: allowed), seconds until it has a token
# again (a string: Lua numbers become integers on the way out)}.
BUCKET_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tokens = {}
local refused = 0
local worst = 0
for i = 1, #KEYS do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'ts')
  local tk = tonumber(state[1]) or burst
  local ts = tonumber(state[2]) or now
  if now > ts then
    tk = math.min(burst, tk + (now - ts) * rate)
  end
  tokens[i] = tk
  if tk < 1 then
    local wait = (1 - tk) / rate
    if refused == 0 or wait > worst then
      refused = i
      worst = wait
    end
  end
end
for i = 1, #KEYS do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tk = tokens[i]
  if refused == 0 then
    tk = tk - 1
  end
  redis.call('HSET', KEYS[i], 'tokens', tostring(tk), 'ts', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil(burst / rate * 1000) + 1000)
end
return {refused, tostring(worst)}
"""


@dataclass(frozen=True)
class Bucket:
    scope: str  # "key", "user" or "project": named in the 429's message
    redis_key: str
    rate_per_s: float
    burst: int


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: int  # whole seconds, ≥ 1 when refused
    scope: str | None = None  # which limit refused


class RateLimiter:
    """Takes one token from every given bucket at once, or from none."""

    def __init__(self, client: redis.Redis) -> None:
        self._script = client.register_script(BUCKET_SCRIPT)

    def take(self, buckets: Sequence[Bucket]) -> Decision:
        live = [b for b in buckets if b.rate_per_s > 0]  # a rate of 0 turns a limit off
        if not live:
            return Decision(True, 0)
        args: list[float | int] = []
        for b in live:
            args += [b.rate_per_s, max(1, b.burst)]
        try:
            refused, wait = self._script(keys=[b.redis_key for b in live], args=args)
        except redis.RedisError as exc:
            log.warning("rate limiter unavailable, request let through: %s", type(exc).__name__)
            trace.get_current_span().add_event("rate_limit_unavailable")
            return Decision(True, 0)
        if int(refused) == 0:
            return Decision(True, 0)
        return Decision(False, max(1, math.ceil(float(wait))), live[int(refused) - 1].scope)


PROJECT_FACTOR = 5  # a project's default allowance: this many keys' worth


def caller_buckets(settings: ApiSettings, caller: Caller) -> list[Bucket]:
    """The buckets a request by ``caller`` draws from: its key's, its user's and,
    for a key scoped to a project, the project's. A per-key rate of 0 turns all off."""
    rate, burst = settings.rate_limit_per_s, settings.rate_limit_burst
    if rate <= 0:
        return []
    user_rate = rate if settings.rate_limit_user_per_s is None else settings.rate_limit_user_per_s
    user_burst = settings.rate_limit_user_burst or burst
    buckets = [
        Bucket("key", keys.rate_limit_key(caller.key_id), rate, burst),
        Bucket("user", keys.rate_limit_user(caller.user.id), user_rate, user_burst),
    ]
    if caller.project_id is not None:
        project_rate = settings.rate_limit_project_per_s
        buckets.append(
            Bucket(
                "project",
                keys.rate_limit_project(caller.project_id),
                PROJECT_FACTOR * rate if project_rate is None else project_rate,
                settings.rate_limit_project_burst or PROJECT_FACTOR * burst,
            )
        )
    return buckets


REFUSAL_MESSAGES = {
    "key": "too many requests with this API key",
    "user": "too many requests by this user (all of their API keys together)",
    "project": "too many requests in this project (all of its keys together)",
}


class TokenBucket:
    """One key's bucket alone: ``rate`` requests per second on average, up to ``burst``."""

    def __init__(self, client: redis.Redis, *, rate_per_s: float, burst: int) -> None:
        self._limiter = RateLimiter(client)
        self.rate = rate_per_s
        self.burst = max(1, burst)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key_id: uuid.UUID) -> Decision:
        """Take one token for ``key_id``; refused when the bucket is empty."""
        bucket = Bucket("key", keys.rate_limit_key(key_id), self.rate, self.burst)
        return self._limiter.take([bucket])
