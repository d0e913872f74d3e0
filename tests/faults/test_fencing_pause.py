"""The missing fencing test, GC-pause form: a live stale writer.

A worker is frozen (SIGSTOP) inside a model call while holding a job's lease
and stays frozen past the lease TTL; another worker takes the job over and
finishes more steps. The frozen worker is woken (SIGCONT) while the rescuer is
still working, with its own model reply waiting: its writes must be refused by
the fencing token, so the two never interleave — every step from the takeover
on carries the rescuer's fence, and each edit is in the file exactly once.
"""

from __future__ import annotations

import os
import re
import signal
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from services.cli.up.commands import celery_worker_argv
from services.common.contracts.tasks import AGENT_QUEUE
from services.common.models import JobStep
from tests.faults.chains import chain_script, chain_text, expected_chain, ledger_problems
from tests.faults.conftest import FaultStack
from tests.faults.stale_writer import wait_model_request, wait_refusal
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Proc

EDITS = 6
FROZEN_TURN = 3  # the victim is frozen waiting for this turn (after edits 1 and 2)
WAKE_TURN = 5  # ... and woken while the rescuer waits for this one (after edits 3, 4)


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
        script = chain_script(edits=EDITS, latency_ms=50, slow_slots=(FROZEN_TURN, WAKE_TURN))
        sim.set_script(session["id"], script)
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "chain"}
        ).json()["job_id"]

        wait_model_request(sim.url, session["id"], FROZEN_TURN)
        os.killpg(victim.popen.pid, signal.SIGSTOP)
        try:
            # The lease (2 s) expires; the rescuer's sweeper re-sends the job.
            svc.worker("rescuer", concurrency=2)
            wait_model_request(sim.url, session["id"], WAKE_TURN, timeout_s=90)
        finally:
            os.killpg(victim.popen.pid, signal.SIGCONT)

        job = wait_job(client, job_id, timeout_s=90)
        refusal = wait_refusal(victim, timeout_s=30)
        assert job["status"] == "succeeded", job
        assert chain_text(fault_stack.home, session["id"]) == expected_chain(EDITS)
        assert ledger_problems(fault_stack.factory, job_id, edits=EDITS) == []
        with fault_stack.factory() as db:
            late = db.scalars(
                select(JobStep).where(
                    JobStep.job_id == uuid.UUID(job_id), JobStep.round >= FROZEN_TURN
                )
            ).all()
        assert refusal is not None, victim.log()[-3000:]
        stale, current = map(int, re.findall(r"fence (\d+) < (\d+)", refusal)[0])
        assert stale < current
        # From the takeover on, every step was written under a newer fence than
        # the victim's (slices may bump it further): nothing of the victim's landed.
        assert late and all(s.fence > stale for s in late), [(s.step_key, s.fence) for s in late]


def _wait_stopped(pid: int, timeout_s: float = 60) -> None:
    """Until ``pid`` is frozen by its own SIGSTOP failpoint (state ``T`` in /proc)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("T", "t"):
            return
        time.sleep(0.05)
    raise AssertionError(f"worker {pid} never reached its stop failpoint")


@pytest.mark.slow
class TestWorkerFrozenBeforeAnEdit:
    """The edit window: the ledger's fence guards rows, not files.

    The victim records edit 2's start (its intended post-state), then freezes just
    before applying it, past its lease. The rescuer takes over, finds the file not
    yet in that state, applies edit 2 and finishes the job. Woken, the victim must
    not apply edit 2 a second time: the fence is checked before the workspace is
    touched (services.worker.spine.lease.fenced_effect).
    """

    def test_woken_worker_never_applies_the_edit_the_rescuer_applied(
        self, fault_stack: FaultStack
    ) -> None:
        svc = fault_stack.services
        sim = svc.simulator()
        client = client_for(svc.api(), make_user(fault_stack.factory))
        # Tool hits: 1 write_file, 2 edit 1, 3 edit 2 — freeze before applying edit 2.
        argv = celery_worker_argv(
            "services.worker.app:app",
            AGENT_QUEUE,
            concurrency=1,
            name="victim-edit@%h",
            quiet_cluster=True,
        )
        victim = Proc(
            "victim-edit",
            argv,
            {**svc.env, "LEAFLAB_FAILPOINTS": "tool.before_effect=stop@3"},
            svc.log_dir,
        )
        svc.procs.append(victim)
        session = client.post("/v1/sessions", json={}).json()
        sim.set_script(session["id"], chain_script(edits=EDITS, latency_ms=50))
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "chain"}
        ).json()["job_id"]

        _wait_stopped(victim.popen.pid)
        try:
            svc.worker("rescuer", concurrency=2)
            job = wait_job(client, job_id, timeout_s=90)
        finally:
            os.killpg(victim.popen.pid, signal.SIGCONT)
        refusal = wait_refusal(victim, timeout_s=30)

        assert job["status"] == "succeeded", job
        assert refusal is not None, victim.log()[-3000:]
        assert chain_text(fault_stack.home, session["id"]) == expected_chain(EDITS)
        assert ledger_problems(fault_stack.factory, job_id, edits=EDITS) == []
