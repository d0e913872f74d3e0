"""A sandbox worker killed with SIGKILL mid-exec: its container is reaped by the
next worker's janitor, the caller of the half-run exec is answered "interrupted"
by that janitor, the new worker serves, and a redelivery of the half-run exec
is reported as interrupted instead of running again."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import docker
import pytest
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.common.models.sandbox import SandboxExecution
from services.sandbox import executions
from services.sandbox.settings import SandboxSettings
from tests.conftest import Stack
from tests.sandbox.conftest import (
    containers_of,
    make_job,
    start_worker,
    stop_worker,
)


class TestWorkerCrash:
    def test_kill_9_mid_exec_container_reaped_and_new_worker_serves(
        self,
        stack: Stack,
        sandbox_image: str,
        sandbox_tables: None,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        session_factory: sessionmaker[Session],
        docker_ready: docker.DockerClient,
        tmp_path: pytest.TempPathFactory,
    ) -> None:
        # A private queue, so the session's shared worker cannot take these tasks.
        queue = f"sandbox-crash-{uuid.uuid4().hex[:6]}"
        first = start_worker(tmp_path, stack.redis_url, queue)  # type: ignore[arg-type]
        refs = make_job(session_factory)
        call = f"call_{uuid.uuid4().hex[:8]}"
        half_run = celery_client.send_task(
            "sandbox.exec",
            queue=queue,
            kwargs={
                "tool_call_id": call,
                "job_id": refs.job_id,
                "session_id": refs.session_id,
                "language": "bash",
                "code": "echo started > started.txt; sleep 120",
                "timeout_s": 120,
            },
        )
        marker = sandbox_settings.workspaces_dir / refs.session_id / "started.txt"
        deadline = time.monotonic() + 120  # a safety net: the loop ends when the exec has started
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), first.log.read_text()[-2000:]
        orphans = containers_of(docker_ready, first.proc.pid)
        assert orphans

        first.proc.kill()  # SIGKILL: no shutdown hook runs
        first.proc.wait()
        assert set(orphans) <= set(containers_of(docker_ready))  # still there, orphaned

        second = start_worker(tmp_path, stack.redis_url, queue)  # type: ignore[arg-type]
        try:
            deadline = time.monotonic() + 60
            while containers_of(docker_ready, first.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert containers_of(docker_ready, first.proc.pid) == []
            result = celery_client.send_task(
                "sandbox.exec",
                queue=queue,
                kwargs={
                    "tool_call_id": f"call_{uuid.uuid4().hex[:8]}",
                    "job_id": refs.job_id,
                    "session_id": refs.session_id,
                    "language": "python",
                    "code": "print(6 * 7)",
                },
                # Another module may have run an in-process Celery worker in this test
                # process, which makes Celery refuse blocking gets unless told otherwise.
            ).get(timeout=60, disable_sync_subtasks=False)
            assert result["stdout"] == "42\n"
            # The caller of the half-run exec was answered for the dead worker.
            answer = half_run.get(timeout=60, disable_sync_subtasks=False)
            assert answer["status"] == "interrupted", answer
            assert answer["error"]["code"] == "sandbox_interrupted"
        finally:
            stop_worker(second)
        row = executions.stored(session_factory, executions.exec_key(refs.job_id, call))
        assert row is not None and row.status == "interrupted"


class TestInterruptedRedelivery:
    def test_redelivery_after_deadline_is_interrupted_not_rerun(
        self,
        sandbox_tables: None,
        session_factory: sessionmaker[Session],
    ) -> None:
        refs = make_job(session_factory)
        key = executions.exec_key(refs.job_id, "call_dead")
        with session_factory() as s, s.begin():
            s.add(
                SandboxExecution(
                    exec_key=key,
                    job_id=uuid.UUID(refs.job_id),
                    tool_call_id="call_dead",
                    status="running",
                    owner="gone/1/x",
                    deadline_at=datetime.now(UTC) - timedelta(seconds=1),
                )
            )
        claim = executions.claim(
            session_factory,
            key=key,
            job_id=refs.job_id,
            tool_call_id="call_dead",
            owner="me",
            run_for_s=30,
        )
        assert claim.fresh is False
        assert claim.result is not None
        assert claim.result["error"]["code"] == "sandbox_interrupted"
        row = executions.stored(session_factory, key)
        assert row is not None and row.status == "interrupted"
