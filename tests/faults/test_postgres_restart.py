"""PostgreSQL stops with ``pg_ctl stop -m immediate`` mid-run and starts again.

That is ``pg_ctl restart -m immediate`` with the down window held open long
enough to ask the API what it says meanwhile. Every pooled connection of the
API and the workers dies at once; they must reconnect (pre-ping on checkout)
and the jobs must finish with one ledger row per step.
"""

from __future__ import annotations

import os
import time

import httpx
import pytest

from tests.faults.chains import chain_text, expected_chain, ledger_problems
from tests.faults.conftest import FaultStack
from tests.faults.load import submit_chains, wait_all_terminal, wait_progress
from tests.fixtures.builders import make_user

JOBS = int(os.environ.get("LEAFLAB_FAULT_JOBS", "20"))
EDITS = 8  # write + 8 edits + the answer: 10 model turns per job
LATENCY_MS = 200
DOWN_S = 2.0


@pytest.mark.slow
class TestPostgresRestart:
    def test_workers_and_api_reconnect_and_every_job_finishes_once(
        self, fault_stack: FaultStack
    ) -> None:
        svc = fault_stack.services
        sim = svc.simulator()
        url = svc.api()
        svc.worker("agent-a", concurrency=10)
        svc.worker("agent-b", concurrency=10)
        user = make_user(fault_stack.factory)
        headers = {"Authorization": f"Bearer {user.key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            jobs = submit_chains(client, sim, jobs=JOBS, edits=EDITS, latency_ms=LATENCY_MS)
            wait_progress(fault_stack.factory, jobs, steps=JOBS * 2)

            fault_stack.pg.stop_immediate()
            down_until = time.monotonic() + DOWN_S
            # A bounded client timeout: a hang fails the test as surely as a 500.
            during = [
                client.get(f"/v1/jobs/{jobs[0].job_id}"),
                client.post("/v1/sessions", json={}),
                client.get("/healthz"),
            ]
            time.sleep(max(0.0, down_until - time.monotonic()))
            fault_stack.pg.start()

            statuses = wait_all_terminal(fault_stack.factory, jobs, timeout_s=180)
            after = client.get(f"/v1/jobs/{jobs[0].job_id}")

        for resp in during[:2]:
            assert resp.status_code == 503, (resp.request.url, resp.status_code, resp.text)
            assert resp.json()["error"]["code"] == "unavailable"
            assert resp.headers["retry-after"].isdigit()
        assert during[2].status_code == 503
        assert during[2].json()["dependencies"]["database"].startswith("error")
        # The API's pool reconnected on its own.
        assert after.status_code == 200 and after.json()["status"] == "succeeded"

        assert set(statuses.values()) == {"succeeded"}, statuses
        for job in jobs:
            assert ledger_problems(fault_stack.factory, job.job_id, edits=EDITS) == []
            assert chain_text(fault_stack.home, job.session_id) == expected_chain(EDITS)
