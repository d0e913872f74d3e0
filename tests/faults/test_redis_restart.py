"""Redis is killed -9 mid-run and comes back empty: every queued message and event is gone.

Postgres holds every job's state, so the sweeper re-sends what the broker lost;
the ledger keeps every tool effect exactly-once; SSE clients reconnect; and
while Redis is down the API answers from Postgres or says 503, never 500.
"""

from __future__ import annotations

import os
import time

import httpx
import pytest

from tests.faults.chains import chain_text, expected_chain, ledger_problems
from tests.faults.conftest import FaultStack
from tests.faults.load import submit_chains, wait_all_terminal, wait_progress
from tests.faults.sse import SseClient
from tests.fixtures.builders import make_user

JOBS = int(os.environ.get("LEAFLAB_FAULT_JOBS", "20"))
EDITS = 8  # write + 8 edits + the answer: 10 model turns per job
LATENCY_MS = 200
SSE_WATCHERS = 4
WORKER_THREADS = 4


def _outage_probes(url: str, key: str, job_id: str) -> list[tuple[str, int, dict]]:
    """What a client gets from the API while Redis is down (bounded timeouts: a hang fails)."""
    headers = {"Authorization": f"Bearer {key}"}
    probes = []
    with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
        for method, path in (
            ("GET", "/healthz"),
            ("GET", f"/v1/jobs/{job_id}"),
            ("GET", f"/v1/jobs/{job_id}/events"),
            ("POST", "/v1/sessions"),
        ):
            resp = client.request(method, path, json={} if method == "POST" else None)
            body = (
                resp.json()
                if resp.headers.get("content-type", "").startswith("application/json")
                else {}
            )
            probes.append((path, resp.status_code, body))
    return probes


@pytest.mark.slow
class TestRedisRestartWithDataLoss:
    def test_jobs_finish_once_and_api_says_503_while_redis_is_down(
        self, fault_stack: FaultStack
    ) -> None:
        svc = fault_stack.services
        svc.env["LEAFLAB_SSE_PING_S"] = "1"
        # Fewer threads than jobs and 1 s slices: at any moment many "advance"
        # messages wait in Redis, and the kill really loses them.
        svc.env["LEAFLAB_TIME_SLICE_S"] = "1"
        sim = svc.simulator()
        url = svc.api()
        svc.worker("agent-a", concurrency=WORKER_THREADS)
        svc.worker("agent-b", concurrency=WORKER_THREADS)
        user = make_user(fault_stack.factory)
        client = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {user.key}"}, timeout=10
        )
        jobs = submit_chains(client, sim, jobs=JOBS, edits=EDITS, latency_ms=LATENCY_MS)
        watchers = [SseClient(url, user.key, j.job_id).start() for j in jobs[:SSE_WATCHERS]]

        wait_progress(fault_stack.factory, jobs, steps=JOBS * 2)
        fault_stack.redis.kill9()
        probes = _outage_probes(url, user.key, jobs[0].job_id)
        # Submitting while the broker is down: the job row is committed (202) and
        # the sweeper sends its message once Redis is back.
        jobs += submit_chains(client, sim, jobs=1, edits=EDITS, latency_ms=LATENCY_MS)
        time.sleep(1.0)  # workers notice; in-flight slices hit the dead broker
        fault_stack.redis.start()
        client.close()

        statuses = wait_all_terminal(fault_stack.factory, jobs, timeout_s=180)
        assert set(statuses.values()) == {"succeeded"}, statuses
        for job in jobs:
            assert ledger_problems(fault_stack.factory, job.job_id, edits=EDITS) == []
            assert chain_text(fault_stack.home, job.session_id) == expected_chain(EDITS)

        by_path = {path: (status, body) for path, status, body in probes}
        assert all(status != 500 for status, _ in by_path.values()), probes
        health_status, health = by_path["/healthz"]
        assert health_status == 503 and health["dependencies"]["redis"].startswith("error"), health
        # Job state lives in Postgres: readable while Redis is down.
        assert by_path[f"/v1/jobs/{jobs[0].job_id}"][0] == 200
        events_status, events_body = by_path[f"/v1/jobs/{jobs[0].job_id}/events"]
        assert events_status == 503, probes
        assert events_body["error"]["code"] == "unavailable", events_body

        for watcher in watchers:
            assert watcher.log.done.wait(60), watcher.log.attempts
            # Each watcher's stream broke with Redis, then (like EventSource) it
            # resumed from Last-Event-ID and ended with the job's final event.
            # Events published during the outage are lost with Redis, silently.
            assert watcher.log.attempts[-1] == "200 ended", watcher.log.attempts
            assert watcher.log.types[-1] == "final", watcher.log.types
            ids = [event_id for event_id, _ in watcher.log.events]
            assert len(ids) == len(set(ids)), "an event was delivered twice"
