"""A circuit breaker per (endpoint, model), its state in Redis so that every worker
process sees the same circuit.

Guarantees:
- ``threshold`` consecutive retryable failures open the circuit; while open, every
  process skips the candidate until ``cooldown_s`` has passed (Redis's clock, so
  workers with skewed clocks agree).
- Failures decay: one that comes more than ``window_s`` after the previous one
  starts the count over, so failures from long ago never help open the circuit.
- After the cooldown exactly one caller, across all processes, is granted the
  half-open probe: the check and the grant are one Lua script, atomic in Redis.
  Others keep skipping until the probe reports; a probe whose worker died is
  re-granted after ``probe_timeout_s``.
- The probe's success closes the circuit, its failure re-opens it for a new cooldown.
  Results of ordinary calls that were already in flight when the circuit opened do
  not move an open or half-open circuit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal, Protocol

from redis import Redis

from services.common.contracts import keys
from services.common.metrics import MODEL_BREAKER_STATE

State = Literal["closed", "half_open", "open"]
Decision = Literal["allow", "probe", "skip"]
STATE_VALUES: dict[str, int] = {"closed": 0, "half_open": 1, "open": 2}
# Circuits nobody touched for a day are forgotten (closed).
KEY_TTL_S = 86_400

_NOW = "local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

# KEYS[1] circuit; ARGV cooldown_ms, probe_timeout_ms, ttl_s -> {decision, state}
_ACQUIRE = (
    _NOW
    + """
local s = redis.call('HMGET', KEYS[1], 'state', 'opened_at', 'probe_until', 'failures')
local state = s[1] or 'closed'
if state == 'closed' then
  if s[4] and tonumber(s[4]) > 0 then return {'allow', 'closed'} end
  return {'allow', 'clean'}
end
if state == 'open' and now < tonumber(s[2]) + tonumber(ARGV[1]) then
  return {'skip', 'open'}
end
if state == 'half_open' and now < tonumber(s[3]) then return {'skip', 'half_open'} end
redis.call('HSET', KEYS[1], 'state', 'half_open', 'probe_until', now + tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {'probe', 'half_open'}
"""
)

# KEYS[1] circuit; ARGV threshold, is_probe ('1'/'0'), ttl_s, window_ms -> state after
_FAILURE = (
    _NOW
    + """
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state ~= 'closed' then
  if state == 'half_open' and ARGV[2] == '1' then
    redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', now)
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    return 'open'
  end
  return state
end
local last = tonumber(redis.call('HGET', KEYS[1], 'last_failure_at') or '')
if last and now - last > tonumber(ARGV[4]) then
  -- The previous failure is older than the window: this one starts a new count.
  redis.call('HSET', KEYS[1], 'failures', 0)
end
local n = redis.call('HINCRBY', KEYS[1], 'failures', 1)
redis.call('HSET', KEYS[1], 'last_failure_at', now)
if n >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', now)
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return 'open'
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 'closed'
"""
)

# KEYS[1] circuit; ARGV is_probe -> state after
_SUCCESS = """
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state == 'closed' or (state == 'half_open' and ARGV[1] == '1') then
  redis.call('DEL', KEYS[1])
  return 'closed'
end
return state
"""


class Breaker(Protocol):
    """What the router needs from a breaker (tests may pass a local one)."""

    def acquire(self, endpoint: str, model: str) -> Decision: ...

    def success(self, endpoint: str, model: str, *, probe: bool) -> State: ...

    def failure(self, endpoint: str, model: str, *, probe: bool) -> State: ...


@dataclass(frozen=True)
class BreakerConfig:
    threshold: int = 3
    cooldown_s: float = 10.0
    probe_timeout_s: float = 30.0
    window_s: float = 60.0


class RedisBreaker:
    """The shared breaker. Every state it observes is exported as the
    ``leaflab_model_breaker_state`` gauge (0 closed, 1 half-open, 2 open)."""

    def __init__(self, redis: Redis, config: BreakerConfig | None = None) -> None:
        self.config = config or BreakerConfig()
        self._redis = redis
        self._acquire = redis.register_script(_ACQUIRE)
        self._failure = redis.register_script(_FAILURE)
        self._success = redis.register_script(_SUCCESS)
        # Circuits this thread last saw closed with no failures counted: a success
        # there changes nothing, so it costs no Redis round trip.
        self._clean = threading.local()

    def acquire(self, endpoint: str, model: str) -> Decision:
        """May a call go to this candidate now: ``allow``, ``probe`` (the one half-open
        trial; report its result with ``probe=True``) or ``skip``."""
        cfg = self.config
        key = keys.breaker(endpoint, model)
        decision, state = self._acquire(
            keys=[key],
            args=[int(cfg.cooldown_s * 1000), int(cfg.probe_timeout_s * 1000), KEY_TTL_S],
        )
        state = _text(state)
        clean = self._clean_keys()
        if state == "clean":
            clean.add(key)
            state = "closed"
        else:
            clean.discard(key)
        self._export(endpoint, model, state)
        return _text(decision)  # type: ignore[return-value]

    def _clean_keys(self) -> set[str]:
        clean: set[str] | None = getattr(self._clean, "keys", None)
        if clean is None:
            clean = self._clean.keys = set()
        return clean

    def failure(self, endpoint: str, model: str, *, probe: bool) -> State:
        """A retryable failure (429, 5xx, timeout, disconnect) of a call."""
        self._clean_keys().discard(keys.breaker(endpoint, model))
        state = _text(
            self._failure(
                keys=[keys.breaker(endpoint, model)],
                args=[
                    self.config.threshold,
                    "1" if probe else "0",
                    KEY_TTL_S,
                    int(self.config.window_s * 1000),
                ],
            )
        )
        self._export(endpoint, model, state)
        return state  # type: ignore[return-value]

    def success(self, endpoint: str, model: str, *, probe: bool) -> State:
        """The endpoint answered (a reply, or a request error that is not its fault)."""
        if not probe and keys.breaker(endpoint, model) in self._clean_keys():
            return "closed"
        state = _text(
            self._success(keys=[keys.breaker(endpoint, model)], args=["1" if probe else "0"])
        )
        self._export(endpoint, model, state)
        return state  # type: ignore[return-value]

    def state(self, endpoint: str, model: str) -> State:
        raw = self._redis.hget(keys.breaker(endpoint, model), "state")
        return _text(raw) if raw else "closed"  # type: ignore[return-value]

    @staticmethod
    def _export(endpoint: str, model: str, state: str) -> None:
        MODEL_BREAKER_STATE.labels(endpoint, model).set(STATE_VALUES.get(state, 0))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
