"""A per-endpoint concurrency limit shared by every worker process (Redis).

A single-slot server (llama-cpp-python) ends its running stream when a new request
arrives, so parallel calls would cancel each other and every retry cancel another;
calls over the endpoint's limit wait for a slot here instead.

Guarantees:
- At most ``limit`` calls hold a slot of one endpoint at once, across processes
  (the check and the grant are one Lua script).
- Waiters are served first come, first served (a queue ordered by arrival), so
  no caller starves; a waiter that stops polling (its process died) leaves the
  queue after ``lease_s``.
- A slot is a lease renewed while its call runs; a holder killed mid-call frees
  its slot when the lease runs out (``lease_s``).
- A wait longer than ``timeout_s`` is an overload: a retryable :class:`ModelError`.
- No limit (None) costs nothing: not one Redis command.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from redis import Redis

from services.common.contracts import keys
from services.common.periodic import Periodic
from services.worker.llm.errors import ModelError
from services.worker.llm.types import ModelResponse

_POLL_S = (0.02, 0.25)  # the first and the longest pause between two tries

# KEYS[1] holders (token -> lease end ms), KEYS[2] queue (token -> arrival),
# KEYS[3] waiter heartbeats (token -> last poll ms), KEYS[4] arrival counter.
# ARGV token, limit, lease_ms -> 1 granted, 0 wait
_ACQUIRE = """
local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - lease)
for _, dead in ipairs(stale) do
  redis.call('ZREM', KEYS[2], dead) redis.call('ZREM', KEYS[3], dead)
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
end
redis.call('ZADD', KEYS[3], now, ARGV[1])
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
if free > 0 and redis.call('ZRANK', KEYS[2], ARGV[1]) < free then
  redis.call('ZREM', KEYS[2], ARGV[1]) redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], lease * 20) end
  return 1
end
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], lease * 20) end
return 0
"""

# KEYS[1] holders; ARGV lease_ms, tokens... -> renewed count (a lost lease is not revived)
_RENEW = """
local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)
local n = 0
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i]) == 1 then
    n = n + 1
  end
end
return n
"""


def overloaded(provider: str, waited_s: float, limit: int) -> ModelError:
    return ModelError(
        f"no free slot of {limit} on this endpoint after {waited_s:.1f}s",
        provider=provider,
        error_type="overloaded",
        retryable=True,
    )


class EndpointLimiter:
    """The slots of every endpoint this process calls; thread-safe."""

    def __init__(self, redis: Redis, *, timeout_s: float = 300.0, lease_s: float = 30.0) -> None:
        self.redis = redis
        self.timeout_s = timeout_s
        self.lease_s = lease_s
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._held: dict[str, str] = {}  # token -> endpoint
        self._lock = threading.Lock()
        # Each process renews the slots it holds (no cluster lock), started with the
        # first slot taken; a shutdown does not wait for it.
        self._renewer = Periodic(
            "slots", self.lease_s / 3, self._renew_held, failure="slot renewal failed", join_s=0
        )

    @contextlib.contextmanager
    def slot(self, endpoint: str, limit: int | None) -> Iterator[None]:
        """Hold one of ``limit`` slots of ``endpoint`` (None: no limit) for the block."""
        if limit is None:
            yield
            return
        token = uuid.uuid4().hex
        self._wait_for(endpoint, token, limit)
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(token, None)
            self.redis.zrem(keys.llm_slots(endpoint)[0], token)

    def _wait_for(self, endpoint: str, token: str, limit: int) -> None:
        slot_keys = keys.llm_slots(endpoint)
        lease_ms = int(self.lease_s * 1000)
        started = time.monotonic()
        pause = _POLL_S[0]
        while not self._acquire(keys=slot_keys, args=[token, max(1, limit), lease_ms]):
            waited = time.monotonic() - started
            if waited >= self.timeout_s:
                self.redis.zrem(slot_keys[1], token)
                self.redis.zrem(slot_keys[2], token)
                raise overloaded(endpoint, waited, limit)
            time.sleep(pause)
            pause = min(_POLL_S[1], pause * 1.5)
        with self._lock:
            self._held[token] = endpoint
            self._renewer.start()

    def _renew_held(self) -> None:
        lease_ms = int(self.lease_s * 1000)
        with self._lock:
            by_endpoint: dict[str, list[str]] = {}
            for token, endpoint in self._held.items():
                by_endpoint.setdefault(endpoint, []).append(token)
        for endpoint, tokens in by_endpoint.items():
            with contextlib.suppress(Exception):  # Redis away: the next round retries
                self._renew(keys=keys.llm_slots(endpoint)[:1], args=[lease_ms, *tokens])

    def holders(self, endpoint: str) -> int:
        """Slots of ``endpoint`` held now (leases not yet run out)."""
        now_ms = int(time.time() * 1000)
        return int(self.redis.zcount(keys.llm_slots(endpoint)[0], now_ms, "+inf"))


class LimitedClient:
    """A :class:`~services.worker.llm.routing.router.CompletionClient` whose calls
    take a slot of the endpoint's limit first; ``limit`` is read per call (the
    configured ``max_concurrency``, else the discovered one)."""

    def __init__(
        self, client: Any, limiter: EndpointLimiter, limit: Callable[[], int | None]
    ) -> None:
        self.client = client
        self.limiter = limiter
        self.limit = limit
        self.provider: str = str(client.provider)

    def complete(self, **kwargs: Any) -> ModelResponse:
        with self.limiter.slot(self.provider, self.limit()):
            response: ModelResponse = self.client.complete(**kwargs)
            return response

    def __getattr__(self, name: str) -> Any:
        # capabilities(), close(), base_url …: the wrapped client's own.
        return getattr(self.client, name)
