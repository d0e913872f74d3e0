"""A job that takes down every worker that runs it is failed, with a reason, after
``LEAFLAB_MAX_LOST_SLICES`` lost slices in a row; one that finishes a step between
losses is not.

The poison is a failpoint that SIGKILLs the worker process (as the OOM killer or a
segfaulting library would) at a tool call. Each time one dies a fresh worker takes
its place, as a supervisor (Kubernetes, systemd) would restart it; the lease TTL
(2 s here) and the sweeper bring the job back to it.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Services

MAX_LOST = 2
TERMINAL = ("succeeded", "failed", "cancelled")


def _read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


def _run_with_restarts(
    services: Services, client: httpx.Client, job_id: str, *, max_deaths: int
) -> tuple[dict[str, Any], int]:
    """Start a worker; each time it is killed at the failpoint, start another. Returns
    the terminal job and how many workers died."""
    deaths = 0
    deadline = time.monotonic() + 240
    while True:
        worker = services.worker(f"worker{deaths}", concurrency=2)
        while worker.popen.poll() is None:
            job = client.get(f"/v1/jobs/{job_id}").json()
            if job["status"] in TERMINAL:
                worker.stop()
                return job, deaths
            assert time.monotonic() < deadline, f"stuck: {job}\n{worker.log()[-3000:]}"
            time.sleep(0.2)
        assert worker.popen.returncode == -9, worker.log()[-3000:]
        assert "failpoint tool." in worker.log(), worker.log()[-3000:]
        deaths += 1
        assert deaths <= max_deaths, f"{deaths} workers died and the job still runs: {job}"


def _poisoned_run(
    services: Services,
    session_factory: sessionmaker[Session],
    failpoints: str,
    replies: list[dict[str, Any]],
) -> tuple[httpx.Client, str, dict[str, Any], int]:
    """One job run on workers that die at ``failpoints``, each replaced as it dies.
    Returns the client, the job id, the terminal job and how many workers died."""
    services.env.update(
        {"LEAFLAB_MAX_LOST_SLICES": str(MAX_LOST), "LEAFLAB_FAILPOINTS": failpoints}
    )
    sim = services.simulator()
    client = client_for(services.api(), make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], {"replies": replies})
    body = {"content": "go"}
    job_id = str(client.post(f"/v1/sessions/{session['id']}/messages", json=body).json()["job_id"])
    job, deaths = _run_with_restarts(services, client, job_id, max_deaths=MAX_LOST + 3)
    return client, job_id, job, deaths


def test_a_job_that_kills_every_worker_is_failed_with_a_reason(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    # Every worker dies as the job's tool call is about to run.
    client, job_id, job, deaths = _poisoned_run(
        services,
        session_factory,
        "tool.before_effect=kill",
        [_read("notes.txt"), {"content": "never reached"}],
    )

    assert job["status"] == "failed", job
    assert f"gave up after {MAX_LOST + 1} attempts in a row lost their worker" in job["error"]
    # The first slice and MAX_LOST retries each took a worker down; the next one
    # failed the job instead of running it, and its worker lived.
    assert deaths == MAX_LOST + 1
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    model = [s for s in steps if s["kind"] == "llm"]
    # The model reply was recorded once and reused by every retry, never asked again.
    assert len(model) == 1 and model[0]["executions"] == 1, model


def test_a_job_that_finishes_a_step_between_losses_is_not_given_up(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    # Each worker records one tool call, then dies after running the next.
    reads = [_read(f"file{i}.txt") for i in range(MAX_LOST + 2)]
    _, _, job, deaths = _poisoned_run(
        services, session_factory, "tool.after_effect=kill@2", [*reads, {"content": "all read"}]
    )

    # More workers died than the limit allows in a row, but each slice made progress.
    assert deaths == MAX_LOST + 1
    assert job["status"] == "succeeded", job
    assert job["result"]["content"] == "all read", job
