"""Parking a job while its model is unreachable: status ``waiting_model``, no lease held.

When a model call fails because every candidate endpoint is down or overloaded
(refused connections, timeouts, 5xx, 429, open circuits: :func:`outage_of`), the
job is not failed. Under its fence it becomes ``waiting_model`` with the lease
cleared, holding no worker thread; the failed call is not recorded (the ledger
stays as it was, so the resumed job makes the same call again) and the budget
reservation was already given back by the call path. Which endpoints it waits on
and since when are on the row, so the wait survives any restart; the model-wait
watcher (model_probe.py) puts it back in the queue when one of them answers.

``model_wait_since`` is when the job last stopped making progress for an
outage: a re-park keeps it unless a ledger step finished after it (the job ran
again in between). A job that has waited ``model_outage_max_s`` is failed with
a message that says which endpoint, for how long, and the last error. A job
parked ``model_server_error_parks`` times in a row on an HTTP 500/501 (its
endpoint is up: the probe resumed it each time) is failed too: the request is
what the server cannot take. Request errors (400, context overflow, auth,
capability mismatches) are not outages: they fail the job as before.

A model call that fails while its worker is stopping (draining: SIGTERM/SIGHUP,
`leaflab up` stopping the stack, whose model endpoint may be going down with it)
is neither: the runners (turn, survey, memory maintenance) end the slice
``SLICE_EXPIRED`` before asking :func:`outage_of`, so the job is released and
enqueued again with nothing recorded, and the next worker makes the same call.
A stop never fails a job, nor counts towards its outage wait.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from services.common.contracts.statuses import JobStatus
from services.worker.llm.errors import ModelError, is_retryable_status
from services.worker.llm.routing.router import ModelRouter
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.finish import finish_slice
from services.worker.spine.lease import Lease, check_fence
from services.worker.spine.outcome import Outcome

log = logging.getLogger(__name__)
WAITING_MODEL = JobStatus.WAITING_MODEL

# Since when the job has waited, as a re-park would leave it: kept while no step
# finished after it (no progress since the wait began), else a new wait starts now.
SINCE_SQL = """CASE WHEN j.model_wait_since IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM job_steps s
         WHERE s.job_id = j.id AND s.finished_at > j.model_wait_since)
     THEN j.model_wait_since ELSE now() END"""
# The same wait goes on (no step finished since it began): its count of parks on a
# server error carries over.
SAME_WAIT_SQL = """j.model_wait_since IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM job_steps s
         WHERE s.job_id = j.id AND s.finished_at > j.model_wait_since)"""
WAITED_SQL = text(
    f"""SELECT EXTRACT(EPOCH FROM now() - {SINCE_SQL}) AS waited_s,
              CASE WHEN {SAME_WAIT_SQL}
                   THEN COALESCE(CAST(j.model_wait->>'server_errors' AS integer), 0)
                   ELSE 0 END AS server_errors
         FROM jobs j WHERE j.id = :id"""
)
# An endpoint that answered 500/501 is up (its probe will say so) but failed this
# request; repeated parks on it mean the request, not an outage, is the trouble.
SERVER_ERROR_STATUSES = frozenset({500, 501})
PARK_SQL = text(
    f"""
    UPDATE jobs j
       SET status = 'waiting_model', error = :message, model_wait = CAST(:wait AS jsonb),
           model_wait_since = {SINCE_SQL},
           lease_owner = NULL, lease_until = NULL, enqueued_at = NULL,
           -- the slice ended with its worker alive: not a lost one
           lost_slices = 0, updated_at = now()
     WHERE j.id = :id AND j.fence = :fence
    """
)


@dataclass(frozen=True)
class Outage:
    """Every endpoint a call tried was down or overloaded."""

    endpoints: list[dict[str, str | None]]  # {"profile", "base_url"}
    last_error: str
    # Some endpoint answered 500/501 (it is up, but failed this request).
    server_error: bool = False

    def names(self) -> str:
        """The endpoints as a user reads them: ``default (http://…/v1)``."""
        shown = [
            f"{e['profile']} ({e['base_url']})" if e.get("base_url") else str(e["profile"])
            for e in self.endpoints
        ]
        return ", ".join(shown) or "(unknown)"

    def record(self, server_errors: int = 0) -> dict[str, Any]:
        return {
            "endpoints": self.endpoints,
            "last_error": self.last_error,
            "server_errors": server_errors,
        }


def outage_of(
    err: ModelError, router: ModelRouter | None, *, base_url: str | None = None
) -> Outage | None:
    """The outage behind ``err``, or None when waiting cannot help.

    A routed failure (``routed_attempts``) is an outage when every attempt failed
    retryably or skipped an open circuit; an auth failure anywhere (a status that
    is not retryable, or a profile skipped after one) makes it a request error. A
    client's own error (no routing; ``base_url`` names its endpoint) is an outage
    when it is retryable.
    """
    if not err.retryable:
        return None
    attempts = getattr(err, "routed_attempts", None)
    if attempts is None:
        return Outage(
            [{"profile": err.provider, "base_url": base_url}],
            str(err),
            server_error=err.status in SERVER_ERROR_STATUSES,
        )
    endpoints: dict[str, dict[str, str | None]] = {}
    server_error = False
    for attempt in attempts:
        server_error |= attempt.status in SERVER_ERROR_STATUSES
        if attempt.outcome == "skipped_profile":
            return None
        if attempt.status is not None and not is_retryable_status(attempt.status):
            return None
        profile = attempt.candidate.profile
        endpoints.setdefault(profile, {"profile": profile, "base_url": _base_url(router, profile)})
    return Outage(list(endpoints.values()), str(err), server_error=server_error)


def _base_url(router: ModelRouter | None, profile: str) -> str | None:
    endpoint = router.endpoints.get(profile) if router is not None else None
    url = getattr(endpoint.client, "base_url", None) if endpoint is not None else None
    return str(url) if url else None


def park_for_model(deps: RuntimeDeps, lease: Lease, events: JobEvents, outage: Outage) -> Outcome:
    """Park the job under its fence (raises ``LeaseLost`` if another worker took it);
    or, once it has waited ``model_outage_max_s``, fail it; or, when a cancel is
    pending, end it cancelled. Returns ``PAUSED`` when parked."""
    limit = deps.settings.model_outage_max_s
    message = f"waiting for the model endpoint {outage.names()}: {outage.last_error}"
    with deps.factory() as db, db.begin():
        _, cancel = check_fence(db, lease)
        row = db.execute(WAITED_SQL, {"id": lease.job_id}).one()
        waited = float(row.waited_s)
        # Consecutive parks on a server error; another kind of outage starts over.
        server_errors = int(row.server_errors) + 1 if outage.server_error else 0
        poisoned = server_errors >= deps.settings.model_server_error_parks
        parked = not cancel and waited < limit and not poisoned
        if parked:
            db.execute(
                PARK_SQL,
                {
                    "message": message,
                    "wait": json.dumps(outage.record(server_errors)),
                    "id": lease.job_id,
                    "fence": lease.fence,
                },
            )
    if cancel:
        return finish_slice(
            deps, lease, events, status=JobStatus.CANCELLED, error="cancelled by user"
        )
    if poisoned:
        error = refused_request(outage, server_errors)
        return finish_slice(deps, lease, events, status=JobStatus.FAILED, error=error)
    if not parked:
        return finish_slice(
            deps, lease, events, status=JobStatus.FAILED, error=gave_up(outage, waited)
        )
    log.warning("job %s parked: %s", lease.job_id, message)
    events.emit("status", {"status": WAITING_MODEL, "message": message})
    return Outcome.PAUSED


def gave_up(outage: Outage, waited_s: float) -> str:
    """The failed job's error: which endpoint, for how long, the last error."""
    return (
        f"the model endpoint {outage.names()} was unreachable for {_duration(waited_s)}; "
        f"last error: {outage.last_error}"
    )


def refused_request(outage: Outage, times: int) -> str:
    """The failed job's error when the endpoint is up but keeps failing this request."""
    return (
        f"the model endpoint {outage.names()} is up but answered a server error to this "
        f"request {times} times in a row (the request may be what breaks it); "
        f"last error: {outage.last_error}"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
