"""SIGHUP stops a Celery worker (never Celery's re-exec), and a stop never fails a job.

A closed terminal or a process manager sends SIGHUP. Celery's own answer (when
not on a terminal) is to re-execute itself, which under ``python -m celery``
dies with an ImportError and drops the running jobs. Here SIGHUP is a warm stop:
the worker stops consuming, and a job whose model call then fails (its endpoint
is going down with the stack) is released for the next worker, not failed and
not parked as a model outage.
"""

from __future__ import annotations

import os
import signal
import time

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.cli.up.commands import celery_worker_argv
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Proc, Services

ANSWER = "answered after the stop"
# Longer than the wait before the signal plus the stop, so the call is in flight.
SLOW_REPLY_MS = 15_000


def _wait_ready(worker: Proc, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while " ready." not in worker.log():
        assert worker.popen.poll() is None, worker.log()[-3000:]
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.1)


def _assert_stopped_not_restarted(worker: Proc, timeout_s: float) -> float:
    """SIGHUP to the worker's main process: it exits 0 by a warm shutdown; returns how long."""
    sent = time.monotonic()
    os.kill(worker.popen.pid, signal.SIGHUP)
    code = worker.popen.wait(timeout=timeout_s)
    took = time.monotonic() - sent
    log = worker.log()
    assert code == 0, log[-3000:]
    assert "Warm shutdown" in log, log[-3000:]
    assert "Restarting celery worker" not in log, log[-3000:]
    assert "ImportError" not in log, log[-3000:]
    return took


def _lease(factory: sessionmaker[Session], job_id: str) -> tuple[str, str | None, str | None]:
    with factory() as db:
        row = db.execute(
            text("SELECT status, lease_owner, error FROM jobs WHERE id = :id"), {"id": job_id}
        ).one()
    return str(row.status), row.lease_owner, row.error


def test_sighup_stops_the_worker_and_a_model_call_failing_meanwhile_releases_the_job(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    # Long leases and requeues: a job continued within them was released by the
    # stopping worker, not recovered after its lease expired.
    services.env.update(
        {
            "LEAFLAB_LEASE_TTL_S": "60",
            "LEAFLAB_REQUEUE_AFTER_S": "60",
            "LEAFLAB_TIME_SLICE_S": "120",
        }
    )
    sim = services.simulator()
    sim_port = int(sim.url.rsplit(":", 1)[1].split("/", 1)[0])
    url = services.api()
    stopping = services.worker("stopping", concurrency=1)
    _wait_ready(stopping)
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], {"replies": [{"content": ANSWER, "delay_ms": SLOW_REPLY_MS}]})
    job_id = str(
        client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}).json()[
            "job_id"
        ]
    )
    deadline = time.monotonic() + 30
    while _lease(session_factory, job_id)[1] is None:
        assert time.monotonic() < deadline, stopping.log()[-3000:]
        time.sleep(0.1)
    time.sleep(1.5)  # the model call is in flight

    # The stack stops: the worker gets SIGHUP, and its model endpoint goes down
    # while the worker still waits on it.
    os.kill(stopping.popen.pid, signal.SIGHUP)
    sim.proc.kill9()
    # Bounded by the wait itself (40 s), not by a timed assert a loaded machine fails.
    _assert_stopped_not_restarted(stopping, timeout_s=40)

    status, owner, error = _lease(session_factory, job_id)
    assert (status, owner, error) in (("running", None, None), ("queued", None, None)), (
        status,
        owner,
        error,
        stopping.log()[-3000:],
    )

    # The next start (endpoint back, a new worker) continues the same job to its answer.
    sim = services.simulator(port=sim_port)
    sim.set_script(session["id"], {"replies": [{"content": ANSWER}]})
    successor = services.worker("successor")
    _wait_ready(successor)
    job = wait_job(client, job_id, timeout_s=40)
    assert job["status"] == "succeeded", job
    assert job["result"]["content"] == ANSWER
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    # The failed call was not recorded: one model step, the successor's.
    assert [s["status"] for s in llm] == ["succeeded"], llm


def test_sighup_stops_a_sandbox_worker(services: Services) -> None:
    argv = celery_worker_argv(
        "services.sandbox.worker:app",
        "sandbox",
        concurrency=1,
        name="sandbox-hup@%h",
        quiet_cluster=True,
    )
    worker = services._spawn("sandbox", argv)
    _wait_ready(worker, timeout_s=90)
    _assert_stopped_not_restarted(worker, timeout_s=40)
