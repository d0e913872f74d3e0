"""The missing fencing test, GC-pause form: a live stale writer.

A worker is frozen (SIGSTOP) inside a model call while holding a job's lease,
stays frozen past the lease TTL, and another worker takes the job over and
finishes it. Then the frozen worker is woken (SIGCONT) with its model reply
waiting: every write it attempts must be refused by the fencing token — the
ledger, the session history and the workspace file stay exactly as the second
worker left them.
"""

from __future__ import annotations

import os
import re
import signal

import pytest

from tests.faults.chains import chain_script, chain_text, expected_chain, ledger_problems
from tests.faults.conftest import FaultStack
from tests.faults.stale_writer import ledger_snapshot, wait_model_request, wait_refusal
from tests.fixtures.builders import client_for, make_user, wait_job

EDITS = 5
SLOW_TURN = 3  # the model turn the victim is frozen in (after edits 1 and 2)


@pytest.mark.slow
class TestFrozenWorker:
    def test_worker_woken_after_takeover_has_every_write_refused(
        self, fault_stack: FaultStack
    ) -> None:
        svc = fault_stack.services
        sim = svc.simulator()
        client = client_for(svc.api(), make_user(fault_stack.factory))
        victim = svc.worker("victim", concurrency=2)
        session = client.post("/v1/sessions", json={}).json()
        sim.set_script(
            session["id"], chain_script(edits=EDITS, latency_ms=50, slow_slot=SLOW_TURN)
        )
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "chain"}
        ).json()["job_id"]

        wait_model_request(sim.url, session["id"], SLOW_TURN)
        os.killpg(victim.popen.pid, signal.SIGSTOP)
        try:
            # The lease (2 s) expires; the rescuer's sweeper re-sends the job.
            svc.worker("rescuer", concurrency=2)
            job = wait_job(client, job_id, timeout_s=90)
            assert job["status"] == "succeeded", job
            settled = ledger_snapshot(fault_stack.factory, job_id)
            text = chain_text(fault_stack.home, session["id"])
        finally:
            os.killpg(victim.popen.pid, signal.SIGCONT)

        refusal = wait_refusal(victim, timeout_s=30)
        # Nothing the stale worker did after waking reached the ledger or the file.
        assert ledger_snapshot(fault_stack.factory, job_id) == settled
        assert chain_text(fault_stack.home, session["id"]) == text == expected_chain(EDITS)
        assert ledger_problems(fault_stack.factory, job_id, edits=EDITS) == []
        assert refusal is not None, victim.log()[-3000:]
        stale, current = map(int, re.findall(r"fence (\d+) < (\d+)", refusal)[0])
        assert stale < current == settled["job"][1]
