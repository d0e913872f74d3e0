"""SIGTERM to a sandbox worker mid-exec (a rolling update): the running code
finishes and its caller gets the real result, then the worker removes its
containers and exits cleanly; nothing is reported interrupted or left behind."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import docker
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.sandbox.settings import SandboxSettings
from tests.conftest import Stack
from tests.sandbox.conftest import containers_of, make_job, start_worker, stop_worker


def test_sigterm_lets_the_running_exec_finish_then_cleans_up(
    stack: Stack,
    sandbox_image: str,
    sandbox_tables: None,
    celery_client: Celery,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
    docker_ready: docker.DockerClient,
    tmp_path: Path,
) -> None:
    queue = f"sandbox-stop-{uuid.uuid4().hex[:6]}"
    worker = start_worker(tmp_path, stack.redis_url, queue)
    try:
        refs = make_job(session_factory)
        running = celery_client.send_task(
            "sandbox.exec",
            queue=queue,
            kwargs={
                "tool_call_id": f"call_{uuid.uuid4().hex[:8]}",
                "job_id": refs.job_id,
                "session_id": refs.session_id,
                "language": "bash",
                "code": "echo started > started.txt; sleep 4; echo finished",
                "timeout_s": 60,
            },
        )
        marker = sandbox_settings.workspaces_dir / refs.session_id / "started.txt"
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), worker.log.read_text()[-2000:]
        assert containers_of(docker_ready, worker.proc.pid)

        worker.proc.send_signal(signal.SIGTERM)
        answer = running.get(timeout=60, disable_sync_subtasks=False)
        assert answer["status"] == "ok", answer
        assert answer["stdout"] == "finished\n"
        assert worker.proc.wait(timeout=60) == 0, worker.log.read_text()[-2000:]
        assert containers_of(docker_ready, worker.proc.pid) == []
    finally:
        stop_worker(worker)
