"""Kill -9 of the sandbox worker in the middle of an agent's python call: the
step is reported interrupted at once (not after its timeout), the job still
completes, and the orphaned container is reaped."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import docker
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.sandbox.conftest import containers_of, start_worker, stop_worker

# Sleeps (and may run, by its tool timeout) far longer than the test waits for
# the job: only the crash handling can end this step in time. Without the
# kill, or without the successor answering for the dead worker, the step
# would run for ~170 s and the job would miss JOB_WAIT_S.
SLOW = "open('started.txt', 'w').write('1')\nimport time\ntime.sleep(170)\n"
JOB_WAIT_S = 100


def test_step_is_interrupted_when_the_sandbox_worker_dies_mid_exec(
    services: Services,
    sandbox_image: str,
    docker_ready: docker.DockerClient,
    stack: Stack,
    session_factory: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    # A private sandbox queue, so the exec lands on the worker this test kills.
    queue = f"sandbox-crash-{uuid.uuid4().hex[:6]}"
    services.env["LEAFLAB_SANDBOX_QUEUE"] = queue
    sim = services.simulator()
    url = services.api()
    services.worker()
    victim = start_worker(tmp_path, stack.redis_url, queue)
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(
        session["id"],
        {
            "replies": [
                {"tool_calls": [{"name": "python", "arguments": {"code": SLOW, "timeout": 170}}]},
                {"content": "the run was lost; reporting what I have"},
            ]
        },
    )
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "run the slow thing"}
    ).json()["job_id"]

    marker = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session["id"] / "started.txt"
    deadline = time.monotonic() + 180  # a safety net: the loop ends when the exec has started
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), victim.log.read_text()[-2000:]
    orphans = containers_of(docker_ready, victim.proc.pid)
    assert orphans
    victim.proc.kill()  # SIGKILL, mid-exec
    victim.proc.wait()

    successor = start_worker(tmp_path, stack.redis_url, queue)
    try:
        job = wait_job(client, job_id, timeout_s=JOB_WAIT_S)
        assert job["status"] == "succeeded", job
        assert job["result"]["content"] == "the run was lost; reporting what I have"
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        python_step = next(s for s in steps if s["name"] == "python")
        assert python_step["status"] == "failed"
        # Not a timeout: the successor saw the owner dead and answered for it.
        assert python_step["error"]["code"] == "sandbox_interrupted", python_step
        deadline = time.monotonic() + 60
        while containers_of(docker_ready, victim.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert containers_of(docker_ready, victim.proc.pid) == []  # reaped by the janitor
    finally:
        stop_worker(successor)
