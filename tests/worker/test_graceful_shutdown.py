"""SIGTERM (a rolling update) hands a worker's jobs on at once, not after the lease TTL.

The worker's lease TTL and the sweeper's requeue delay are set to 60 s here: a
job continued sooner than that was released and re-enqueued by the stopping
worker itself. Without draining the job would sit until the lease expired.

The stopping worker runs one thread, so a second job's message waits in it,
taken from the queue (prefetched) but not started. The agent queue runs without
kombu's emulated acks, so Redis no longer holds that message; the worker must
give it back as it stops (kombu restores the messages it delivered and nobody
acked), or that job waits for the sweeper's 60 s.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.tasks import AGENT_QUEUE
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.counting import counting_script, succeeded_steps
from tests.fixtures.processes import Proc, Services, Simulator

ROUNDS = 25
LEASE_TTL_S = 60.0


def _wait_ready(worker: Proc, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while " ready." not in worker.log():
        assert worker.popen.poll() is None, worker.log()[-3000:]
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.1)


def _submit_waiting_job(client: httpx.Client, sim: Simulator, worker: Proc, redis_url: str) -> str:
    """A short job whose advance message the busy one-thread ``worker`` has taken from
    the queue but not started."""
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], counting_script(1, latency_ms=50))
    job_id = str(
        client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "count"}).json()[
            "job_id"
        ]
    )
    deadline = time.monotonic() + 30
    with redis.Redis.from_url(redis_url) as queue:
        # The API sent the message before answering; the worker's consumer takes it at once.
        while queue.llen(AGENT_QUEUE) > 0:
            assert time.monotonic() < deadline, f"not prefetched: {worker.log()[-3000:]}"
            time.sleep(0.05)
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"
    return job_id


def test_sigterm_finishes_the_step_and_another_worker_continues_at_once(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.env.update(
        {
            "LEAFLAB_LEASE_TTL_S": str(LEASE_TTL_S),
            "LEAFLAB_REQUEUE_AFTER_S": str(LEASE_TTL_S),
            "LEAFLAB_TIME_SLICE_S": "120",
        }
    )
    sim = services.simulator()
    url = services.api()
    stopping = services.worker("stopping", concurrency=1)
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], counting_script(ROUNDS, latency_ms=1000))
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "count"}
    ).json()["job_id"]

    deadline = time.monotonic() + 60
    while succeeded_steps(session_factory, job_id) < 4:
        assert time.monotonic() < deadline, stopping.log()[-3000:]
        time.sleep(0.05)
    # Another user's job: a finishing job of the same user would wake it.
    other = client_for(url, make_user(session_factory))
    waiting_id = _submit_waiting_job(other, sim, stopping, services.env["LEAFLAB_REDIS_URL"])
    successor = services.worker("successor")
    _wait_ready(successor)

    terminated = time.monotonic()
    os.killpg(stopping.popen.pid, signal.SIGTERM)
    # Warm shutdown: the current step ends, the lease is released, the worker exits 0,
    # long before the rest of the job (or its 120 s slice) could have run there.
    assert stopping.popen.wait(timeout=40) == 0, stopping.log()[-3000:]
    stopped_after = time.monotonic() - terminated
    left = client.get(f"/v1/jobs/{job_id}").json()
    assert left["status"] != "succeeded", (
        f"ran the whole job in {stopped_after:.1f}s: {stopping.log()[-2500:]}"
    )
    assert stopped_after < 25, f"the worker took {stopped_after:.1f}s to stop"
    # The prefetched message went back to the queue (kombu restores what it had
    # delivered but not acked), so the successor ran that job at once. Both waits end
    # before the lease could expire: a job that sat out the lease fails the wait itself.
    before_lease_ends = terminated + LEASE_TTL_S - 10
    waiting = wait_job(other, waiting_id, timeout_s=before_lease_ends - time.monotonic())
    assert waiting["status"] == "succeeded", waiting
    job = wait_job(client, job_id, timeout_s=max(1.0, before_lease_ends - time.monotonic()))
    assert job["status"] == "succeeded", job

    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    tools = [s for s in steps if s["kind"] == "tool"]
    assert len(tools) == ROUNDS + 1
    assert all(s["status"] == "succeeded" and s["executions"] == 1 for s in tools), tools
    workspace = Path(services.env["LEAFLAB_HOME"]) / "workspaces" / session["id"]
    assert (workspace / "n.txt").read_text() == str(ROUNDS)
