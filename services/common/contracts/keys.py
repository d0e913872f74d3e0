"""Every Redis key and stream name Leaflab uses, spelled here once.

Processes meet in Redis as much as over HTTP or Celery: a worker writes a job's
stream and the API reads it, the router writes a circuit breaker and the admin
dashboard reads it. So each name is defined once, here, as a ``Final`` constant
or a function per parameterised key, with who writes it, who reads it and how
long it lives; every call site imports it from here (an import rule,
``tests/test_import_rules.py``, refuses a ``leaflab:`` literal anywhere else).

The values never change: a deployed Redis and a rolling upgrade, old and new
processes side by side, depend on both spelling a key the same way
(``tests/common/test_keys.py`` pins them). A new key gets a new name here.

Stdlib only, like ``statuses``: any process may import it.
"""

from __future__ import annotations

import uuid
from typing import Final

# --- Event streams: {type, data} entries (services/common/events.py decodes them) ----


def job_stream(job_id: str) -> str:
    """A job's events. Written by workers and the API (``EventPublisher``), read by the
    API's SSE route; capped at ``STREAM_MAXLEN`` entries, expires 7 days after the
    last write (``services/common/events.py``)."""
    return f"leaflab:job:{job_id}"


def document_stream(document_id: str) -> str:
    """A library document's ingestion progress. Written by the library service
    (``services/library/progress.py``), read by the API's SSE route, deleted with the
    document; same cap and expiry as a job's stream."""
    return f"leaflab:library:document:{document_id}"


# --- Model routing (agent workers; the admin API reads) ------------------------------

BREAKER_PREFIX: Final = "leaflab:breaker:"


def breaker(endpoint: str, model: str) -> str:
    """One (endpoint, model)'s circuit breaker, a hash. Written by every agent worker's
    router (``worker/llm/routing/breaker.py``), read by the admin dashboard (which scans
    ``BREAKER_PREFIX``); forgotten a day after its last change."""
    return f"{BREAKER_PREFIX}{endpoint}|{model}"


def split_breaker(key: str) -> tuple[str, str]:
    """(endpoint, model) of a ``breaker`` key; the model is after the last ``|``."""
    endpoint, _, model = key.removeprefix(BREAKER_PREFIX).rpartition("|")
    return endpoint, model


LLM_SLOTS_PREFIX: Final = "leaflab:llm_slots:"


def llm_slots(endpoint: str) -> list[str]:
    """An endpoint's concurrency slots, four sorted sets/counters in the order the
    limiter's script takes them: holders, queue, waiter heartbeats, arrival counter.
    Written and read by agent workers only (``worker/llm/concurrency.py``); each
    expires 20 slot leases after its last use."""
    base = f"{LLM_SLOTS_PREFIX}{endpoint}"
    return [f"{base}:holders", f"{base}:queue", f"{base}:seen", f"{base}:seq"]


# Discovered endpoint capabilities (services/common/model_caps.py reads them): written
# by agent workers, read by the admin API and the admin dashboard.
MODEL_CAPS_PREFIX: Final = "leaflab:model_caps:"
# A hash: "profile|model" -> the key of that pair's current record. No expiry.
MODEL_CAPS_INDEX: Final = f"{MODEL_CAPS_PREFIX}index"
# A timestamp: the admin API's latest "rediscover now"; workers compare their records'.
MODEL_CAPS_REFRESH: Final = f"{MODEL_CAPS_PREFIX}refresh"


def model_caps_record(profile: str, model: str, config_hash: str) -> str:
    """One discovery's JSON record; expires with the discovery's TTL."""
    return f"{MODEL_CAPS_PREFIX}rec:{profile}|{model}|{config_hash}"


def model_caps_lock(config_hash: str) -> str:
    """Held (``SET NX EX``, the discovery's timeout + 10 s) by the one worker that
    discovers a configuration while the others wait for its record."""
    return f"{MODEL_CAPS_PREFIX}lock:{config_hash}"


# --- Agent workers' background loops (services/common/periodic.py's ClusterLock) -----

# Held for 90 % of a period by the one worker that runs the period's sweep.
SWEEPER_LOCK: Final = "leaflab:sweeper:lock"
# Completed sweeps, cluster-wide (INCR, no expiry): an operator sees it advance, a
# test waiting for "nothing happens" proves sweeps ran meanwhile.
SWEEPER_SWEEPS: Final = "leaflab:sweeper:sweeps"
# Held for 90 % of a period by the one worker that probes the endpoints of jobs
# waiting for a model (worker/spine/model_probe.py).
MODEL_WAIT_LOCK: Final = "leaflab:model_wait:lock"


# --- Sandbox workers ------------------------------------------------------------------


def sandbox_heartbeat(owner: str) -> str:
    """A sandbox worker's heartbeat (JSON state), renewed with a TTL of
    ``sandbox_heartbeat_ttl_s``; other workers' janitors check it to find orphans."""
    return f"leaflab:sandbox:worker:{owner}"


SANDBOX_INFLIGHT_PREFIX: Final = "leaflab:sandbox:inflight:"


def sandbox_inflight(owner: str) -> str:
    """A sandbox worker's running executions, a hash (Celery task id -> exec key);
    cleared by the worker, claimed by another's janitor once the owner is dead.
    No expiry."""
    return f"{SANDBOX_INFLIGHT_PREFIX}{owner}"


# --- API ------------------------------------------------------------------------------


def rate_limit_key(key_id: uuid.UUID | str) -> str:
    """An API key's token bucket (a hash; every API process takes from it), expiring
    once it would be full again. The name predates the user and project scopes."""
    return f"leaflab:ratelimit:{key_id}"


def rate_limit_user(user_id: uuid.UUID | str) -> str:
    """A user's token bucket (all of their keys together), like ``rate_limit_key``."""
    return f"leaflab:ratelimit:user:{user_id}"


def rate_limit_project(project_id: uuid.UUID | str) -> str:
    """A project's token bucket (all of its keys together), like ``rate_limit_key``."""
    return f"leaflab:ratelimit:project:{project_id}"


def web_session(token_sha256: str) -> str:
    """A browser session, by the hex SHA-256 of its cookie token (Redis never holds the
    token); written and read by the API, expiring after ``web_session_ttl_s`` idle."""
    return f"leaflab:web:session:{token_sha256}"


def oidc_pending(state_sha256: str) -> str:
    """A started single sign-on, by the hex SHA-256 of its ``state``; taken once
    (GETDEL) by the API's callback, expires after ten minutes."""
    return f"leaflab:web:oidc:pending:{state_sha256}"
