"""``CapabilityBook``: every routed endpoint's capabilities, cached in Redis.

Guarantees:
- Read from Redis at start; a miss is discovered by one worker at a time per
  endpoint (a Redis lock); the others wait for its record, at most the discovery's
  timeout, then use the configured defaults until a later check finds it.
- A record lives ``ttl_s`` (an unreachable endpoint's ``retry_s``); its key hashes
  the endpoint, model and profile options, so a changed profile is rediscovered.
- A refresh request (``leaflab admin models --refresh``) newer than a record makes
  the next check rediscover it.
- The getters handed to clients read memory only; a background thread rechecks
  Redis every ``recheck_s``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

from redis import Redis

from services.common import model_caps
from services.common.contracts import keys
from services.common.periodic import Periodic
from services.worker.llm.capabilities import Capabilities
from services.worker.llm.discovery.configured import Source, configured_values, effective
from services.worker.llm.discovery.run import DiscoveryConfig, SlotHolder, Target, discover
from services.worker.llm.settings import ProfileConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BookConfig:
    ttl_s: float = 86_400.0
    retry_s: float = 60.0
    recheck_s: float = 10.0
    default_context: int | None = None
    discovery: DiscoveryConfig = DiscoveryConfig()


def config_hash(profile: ProfileConfig, model: str) -> str:
    """What a record depends on: the endpoint, the model and the profile's options."""
    spec = {"base_url": profile.base_url, "model": model, **profile.options().model_dump()}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class _Entry:
    profile: ProfileConfig
    model: str
    caps: Capabilities
    discovered: Capabilities
    sources: dict[str, Source]

    @property
    def hash(self) -> str:
        return config_hash(self.profile, self.model)

    @property
    def key(self) -> str:
        return keys.model_caps_record(self.profile.name, self.model, self.hash)


class CapabilityBook:
    """Thread-safe; one per worker process."""

    def __init__(
        self,
        redis: Redis | None,
        routed: list[tuple[ProfileConfig, str]],
        config: BookConfig | None = None,
    ) -> None:
        self.redis = redis
        self.config = config or BookConfig()
        self._entries = {(p.name, m): self._fresh_entry(p, m) for p, m in routed}
        self._slots: dict[str, SlotHolder] = {}
        # Every worker rechecks its own endpoints (each keeps what it found in memory).
        self._loop = Periodic(
            "capabilities",
            self.config.recheck_s,
            self.refresh,
            failure="capability recheck failed",
            join_s=5,
        )

    def _fresh_entry(self, profile: ProfileConfig, model: str) -> _Entry:
        base = Capabilities()
        caps, sources = effective(base, profile, default_context=self.config.default_context)
        return _Entry(profile, model, caps, base, sources)

    # --- what clients read -------------------------------------------------------

    def caps(self, profile: str, model: str | None = None) -> Capabilities:
        """The effective capabilities (memory only); a profile's first model by default."""
        entry = self._entry(profile, model)
        return entry.caps if entry is not None else Capabilities()

    def getter(self, profile: str) -> Any:
        """A no-argument callable for ``ModelClient(capabilities=...)``."""
        return lambda: self.caps(profile)

    def sources(self, profile: str, model: str | None = None) -> dict[str, Source]:
        entry = self._entry(profile, model)
        return dict(entry.sources) if entry is not None else {}

    def set_slot(self, profile: str, slot: SlotHolder) -> None:
        """The concurrency slot discovery holds around each probe of this profile."""
        self._slots[profile] = slot

    def _entry(self, profile: str, model: str | None) -> _Entry | None:
        if model is not None:
            return self._entries.get((profile, model))
        return next((e for (p, _), e in self._entries.items() if p == profile), None)

    # --- loading and discovering --------------------------------------------------

    def load(self) -> None:
        """Read every record; discover the missing and the stale (bounded per endpoint)."""
        for entry in list(self._entries.values()):
            try:
                self._load_one(entry, wait=True)
            except Exception:  # noqa: BLE001 - a failed check must not stop the worker
                log.exception("capability check of %s:%s failed", entry.profile.name, entry.model)

    def _load_one(self, entry: _Entry, *, wait: bool, force: bool = False) -> None:
        if not entry.profile.discover:
            return
        if self.redis is None:
            if entry.discovered.discovered_at == 0 or force:
                self._apply(entry, self._discover(entry))
            return
        record = None if force else self._read(entry)
        if record is not None:
            self._apply(entry, record)
            return
        lock = keys.model_caps_lock(entry.hash)
        hold_s = int(self.config.discovery.timeout_s + 10)
        if self.redis.set(lock, socket.gethostname(), nx=True, ex=hold_s):
            try:
                caps = self._discover(entry)
                self._write(entry, caps)
                self._apply(entry, caps)
            finally:
                self.redis.delete(lock)
        elif wait:
            self._wait_for_record(entry)

    def _discover(self, entry: _Entry) -> Capabilities:
        target = Target(entry.profile.base_url, entry.profile.api_key, entry.model)
        caps = discover(target, self.config.discovery, slot=self._slots.get(entry.profile.name))
        log.info(
            "discovered %s:%s: %s", entry.profile.name, entry.model, json.dumps(caps.to_dict())
        )
        return caps

    def _wait_for_record(self, entry: _Entry) -> None:
        deadline = time.monotonic() + self.config.discovery.timeout_s + 1
        while time.monotonic() < deadline:
            record = self._read(entry)
            if record is not None:
                self._apply(entry, record)
                return
            time.sleep(0.1)

    def _read(self, entry: _Entry) -> Capabilities | None:
        """The cached discovery, unless a refresh was requested after it."""
        assert self.redis is not None
        raw = self.redis.get(entry.key)
        if raw is None:
            return None
        caps = Capabilities.from_dict(json.loads(raw)["discovered"])
        if model_caps.refresh_requested_at(self.redis) > caps.discovered_at:
            return None
        return caps

    def _write(self, entry: _Entry, caps: Capabilities) -> None:
        assert self.redis is not None
        eff, sources = effective(caps, entry.profile, default_context=self.config.default_context)
        record = {
            "profile": entry.profile.name,
            "base_url": entry.profile.base_url,
            "model": entry.model,
            "config_hash": entry.hash,
            "configured": configured_values(entry.profile),
            "discovered": caps.to_dict(),
            "effective": eff.to_dict(),
            "sources": sources,
            "written_by": socket.gethostname(),
        }
        ttl = self.config.ttl_s if caps.reachable else self.config.retry_s
        pipe = self.redis.pipeline()
        pipe.set(entry.key, json.dumps(record), ex=max(1, int(ttl)))
        pipe.hset(
            keys.MODEL_CAPS_INDEX,
            model_caps.index_field(entry.profile.name, entry.model),
            entry.key,
        )
        pipe.execute()

    def _apply(self, entry: _Entry, caps: Capabilities) -> None:
        default = self.config.default_context
        entry.caps, entry.sources = effective(caps, entry.profile, default_context=default)
        entry.discovered = caps

    def refresh(self, *, force: bool = False) -> None:
        """One check of every endpoint (what the background thread runs)."""
        for entry in list(self._entries.values()):
            try:
                self._load_one(entry, wait=False, force=force)
            except Exception:  # noqa: BLE001 - Redis or an endpoint may be down for a while
                log.exception("capability check of %s:%s failed", entry.profile.name, entry.model)

    def start(self) -> None:
        """Recheck every ``recheck_s`` in a daemon thread (until :meth:`stop`)."""
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
