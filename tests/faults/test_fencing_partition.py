"""The missing fencing test, partition form: a worker on another "host" is cut off.

The victim worker runs in its own network namespace and reaches Postgres,
Redis and the model only over a veth link. The link is cut while the victim
waits on the model holding a job's lease; the lease expires, a worker on this
side takes the job over and finishes it; then the link heals, the victim's
model reply arrives, and every write it attempts must be refused by the fence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from services.cli.up.commands import celery_worker_argv, model_sim_argv
from tests.faults.chains import chain_script, chain_text, expected_chain, ledger_problems
from tests.faults.conftest import FaultStack, start_fault_stack, stop_fault_stack
from tests.faults.netns import HOST_ADDR, NetnsUnavailable, WorkerHost, worker_host
from tests.faults.stale_writer import ledger_snapshot, wait_model_request, wait_refusal
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.opt_outs import NETNS
from tests.fixtures.processes import Proc, Services, Simulator, free_port, wait_http

EDITS = 5
SLOW_TURN = 3


@pytest.fixture
def partitioned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FaultStack, WorkerHost]]:
    """Private Postgres, Redis and simulator listening only on the link's host address."""
    with ExitStack() as cleanup:
        NETNS.skip_if_opted_out()
        try:
            host = cleanup.enter_context(worker_host())
        except NetnsUnavailable as exc:
            NETNS.missing(f"network namespaces are not available here: {exc}")
        fs = start_fault_stack(tmp_path, monkeypatch, hosts=(HOST_ADDR,))
        cleanup.callback(stop_fault_stack, fs)  # runs before the namespace goes
        yield fs, host


def _simulator_on_link(svc: Services) -> Simulator:
    port = free_port()
    proc = Proc("model-sim", model_sim_argv(port=port, host=HOST_ADDR), svc.env, svc.log_dir)
    svc.procs.append(proc)
    wait_http(f"http://{HOST_ADDR}:{port}/healthz", proc)
    sim = Simulator(proc, f"http://{HOST_ADDR}:{port}/v1")
    svc.env["LEAFLAB_LLM_BASE_URL"] = sim.url
    return sim


def _worker_in_namespace(svc: Services, host: WorkerHost) -> Proc:
    argv = celery_worker_argv(
        "services.worker.app:app", "agent", concurrency=2, name="victim@%h", quiet_cluster=True
    )
    proc = Proc("victim", host.exec_prefix() + argv, svc.env, svc.log_dir)
    svc.procs.append(proc)
    return proc


@pytest.mark.slow
class TestPartitionedWorker:
    def test_worker_back_from_a_partition_has_every_write_refused(
        self, partitioned: tuple[FaultStack, WorkerHost]
    ) -> None:
        fault_stack, host = partitioned
        svc = fault_stack.services
        sim = _simulator_on_link(svc)
        client = client_for(svc.api(), make_user(fault_stack.factory))
        victim = _worker_in_namespace(svc, host)
        session = client.post("/v1/sessions", json={}).json()
        sim.set_script(
            session["id"], chain_script(edits=EDITS, latency_ms=50, slow_slots=(SLOW_TURN,))
        )
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "chain"}
        ).json()["job_id"]

        wait_model_request(sim.url, session["id"], SLOW_TURN)
        host.cut()
        try:
            svc.worker("rescuer", concurrency=2)
            job = wait_job(client, job_id, timeout_s=90)
            assert job["status"] == "succeeded", job
            settled = ledger_snapshot(fault_stack.factory, job_id)
            text = chain_text(fault_stack.home, session["id"])
        finally:
            host.heal()

        # TCP retransmits back off while the link is down: allow for the last gap.
        refusal = wait_refusal(victim, timeout_s=60)
        assert chain_text(fault_stack.home, session["id"]) == text == expected_chain(EDITS)
        assert ledger_snapshot(fault_stack.factory, job_id) == settled
        assert ledger_problems(fault_stack.factory, job_id, edits=EDITS) == []
        assert refusal is not None, victim.log()[-3000:]
        stale, current = map(int, re.findall(r"fence (\d+) < (\d+)", refusal)[0])
        assert stale < current == settled["job"][1]
