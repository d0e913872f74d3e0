"""Fixtures for the sandbox service: a real Docker daemon, the real image, real
Celery sandbox workers as subprocesses.

Docker is made available with scripts/ensure_docker.sh; when that fails the
tests fail (never skip), so CI cannot pass without the real wall.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
import redis
from celery import Celery
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.cli.up.commands import celery_worker_argv
from services.common.celery_app import build_celery
from services.common.contracts.tasks import SANDBOX_QUEUE
from services.common.models import Base, Job, Project, User
from services.common.models.sandbox import SandboxExecution
from services.sandbox.backends.docker.containers import LABEL, LABEL_OWNER, LABEL_RUN
from services.sandbox.backends.docker.egress import remove_egress
from services.sandbox.image import ensure_image
from services.sandbox.settings import SandboxSettings, get_sandbox_settings
from services.worker.tools.base import ToolContext
from services.worker.tools.sandbox_client import CelerySandbox
from tests.conftest import Stack

REPO = Path(__file__).resolve().parents[2]
# Every container this test run's workers start carries this label value, so
# the leak check below sees this run's containers and never a parallel run's.
RUN_LABEL = f"test-{uuid.uuid4().hex[:12]}"
# Small limits keep the abuse suite fast on a 2-core machine.
SANDBOX_ENV = {
    "LEAFLAB_SANDBOX_BACKEND": "docker",
    "LEAFLAB_SANDBOX_MEMORY_MB": "256",
    "LEAFLAB_SANDBOX_PIDS": "64",
    "LEAFLAB_SANDBOX_TMPFS_MB": "8",
    "LEAFLAB_SANDBOX_FILE_SIZE_MB": "16",
    "LEAFLAB_SANDBOX_OUTPUT_KILL_BYTES": "4000000",
    "LEAFLAB_SANDBOX_WORKSPACE_QUOTA_MB": "48",
    "LEAFLAB_SANDBOX_POOL_SPARES": "1",
    "LEAFLAB_SANDBOX_HEARTBEAT_TTL_S": "3",
    "LEAFLAB_SANDBOX_JANITOR_INTERVAL_S": "1",
    "LEAFLAB_SANDBOX_RUN_LABEL": RUN_LABEL,
    # This run's own sandbox network (and egress rules), removed when the run ends.
    "LEAFLAB_SANDBOX_EGRESS_NETWORK": f"leaflab-egress-{RUN_LABEL}",
}
LEAK_GRACE_S = 30.0
# A safety net only: start_worker returns as soon as the worker says ready.
WORKER_START_S = 180.0


def run_containers(client: docker.DockerClient) -> list[str]:
    """Ids of the containers (running or not) that this test run started."""
    # The plain list call: containers.list() would inspect each one and fail on
    # any that a janitor removes meanwhile.
    found = client.api.containers(all=True, filters={"label": f"{LABEL_RUN}={RUN_LABEL}"})
    return [str(c["Id"]) for c in found]


@pytest.fixture(scope="session", autouse=True)
def no_leaked_containers() -> Iterator[None]:
    """Fail the run if a sandbox container of this run outlives it.

    Session-scoped and autouse, so it is set up before (and torn down after)
    every sandbox worker and backend of the run. A janitor may still be
    removing a container when the last worker stops, hence the short grace.
    """
    yield
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException:
        return  # no Docker: no container can have been started
    deadline = time.monotonic() + LEAK_GRACE_S
    left = run_containers(client)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = run_containers(client)
    for container_id in left:
        client.api.remove_container(container_id, force=True)
    remove_egress(client, SandboxSettings(**_egress_fields()))
    if left:
        pytest.fail(
            f"{len(left)} sandbox container(s) labelled {LABEL_RUN}={RUN_LABEL} outlived the "
            f"test run (removed now): {[c[:12] for c in left]}",
            pytrace=False,
        )


def _egress_fields() -> dict[str, Any]:
    return {"sandbox_egress_network": SANDBOX_ENV["LEAFLAB_SANDBOX_EGRESS_NETWORK"]}


def require_docker(purpose: str) -> None:
    """Starts the Docker daemon if needed (the test command's script); fails the test, with
    the script's output, where it cannot."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "ensure_docker.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"Docker is required {purpose} and could not be started:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def docker_ready() -> docker.DockerClient:
    require_docker("for the sandbox tests")
    return docker.from_env()


@pytest.fixture(scope="session")
def sandbox_settings(stack: Stack, docker_ready: docker.DockerClient) -> Iterator[SandboxSettings]:
    os.environ.update(SANDBOX_ENV)
    get_sandbox_settings.cache_clear()
    yield get_sandbox_settings()
    get_sandbox_settings.cache_clear()


@pytest.fixture(scope="session")
def sandbox_image(sandbox_settings: SandboxSettings) -> str:
    # Builds on first use (the offline recipe here: no image registry).
    return ensure_image(sandbox_settings)


@pytest.fixture(scope="session")
def sandbox_tables(engine: Engine) -> None:
    # Until the lead's migration adds sandbox_executions.
    Base.metadata.create_all(engine, tables=[SandboxExecution.__table__])  # type: ignore[list-item]


@pytest.fixture(scope="session")
def celery_client(sandbox_settings: SandboxSettings) -> Celery:
    return build_celery(sandbox_settings)


@dataclass
class WorkerProc:
    proc: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None


def heartbeat_of(client: redis.Redis, pid: int) -> dict[str, Any] | None:
    """The latest heartbeat of the sandbox worker process ``pid``, if it wrote one."""
    for key in client.scan_iter("leaflab:sandbox:worker:*"):
        if f"/{pid}/" in key.decode():
            raw = client.get(key)
            if raw:
                return dict(json.loads(raw))
    return None


def start_worker(tmp: Path, redis_url: str, queue: str = "sandbox") -> WorkerProc:
    """A sandbox worker process, returned once it takes tasks.

    Its runtime starts in Celery's worker_ready handler, which holds off the
    consumer until the pool is warm: the first heartbeat comes before that,
    so readiness is the heartbeat's ``ready`` flag, not the key existing.
    """
    log = tmp / f"sandbox-worker-{uuid.uuid4().hex[:6]}.log"
    cmd = celery_worker_argv(
        "services.sandbox.worker:app",
        queue,
        concurrency=4,
        name=f"sbx-{uuid.uuid4().hex[:6]}@%h",
        quiet_cluster=True,
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}
        )
    client = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + WORKER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sandbox worker exited: {log.read_text()[-3000:]}")
        if (heartbeat_of(client, proc.pid) or {}).get("ready"):
            return WorkerProc(proc=proc, log=log)
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"sandbox worker not ready: {log.read_text()[-3000:]}")


def stop_worker(worker: WorkerProc) -> None:
    if worker.alive():
        worker.proc.send_signal(signal.SIGTERM)
        try:
            worker.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            worker.proc.wait()


@pytest.fixture(scope="session")
def sandbox_worker(
    stack: Stack, sandbox_image: str, sandbox_tables: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProc]:
    worker = start_worker(tmp_path_factory.mktemp("sbxlogs"), stack.redis_url)
    yield worker
    stop_worker(worker)


def containers_of(client: docker.DockerClient, pid: int | None = None) -> list[str]:
    found = client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    if pid is None:
        return [str(c["Id"]) for c in found]
    return [
        str(c["Id"]) for c in found if f"/{pid}/" in (c.get("Labels") or {}).get(LABEL_OWNER, "")
    ]


def wait_for_spare(redis_url: str, worker: WorkerProc, timeout: float = 120) -> None:
    """Until ``worker`` reports a warm spare in its pool in a heartbeat written after now.

    The pool itself is the condition: a container that Docker lists is not a
    spare until its runner has said ready, which takes a while on a busy host.
    """
    client = redis.Redis.from_url(redis_url)
    since = time.time()
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        state = heartbeat_of(client, worker.proc.pid) or {}
        if state.get("at", 0) >= since and state.get("spares", 0) >= 1:
            return
        time.sleep(0.2)
    raise AssertionError(f"sandbox worker reported no warm spare: {state}")


@dataclass
class JobRefs:
    job_id: str
    session_id: str
    user_id: str
    project_id: str


def make_job(factory: sessionmaker[Session], *, allow_network: bool = False) -> JobRefs:
    tag = uuid.uuid4().hex[:10]
    with factory() as s, s.begin():
        user = User(email=f"sbx-{tag}@example.org")
        project = Project(name=f"sbx-{tag}", allow_network=allow_network)
        s.add_all([user, project])
        s.flush()
        job = Job(user_id=user.id, project_id=project.id, kind="turn", input={})
        s.add(job)
        s.flush()
        return JobRefs(
            job_id=str(job.id),
            session_id=uuid.uuid4().hex,
            user_id=str(user.id),
            project_id=str(project.id),
        )


def tool_ctx(
    refs: JobRefs,
    celery_app: Celery,
    settings: SandboxSettings,
    call: str | None = None,
    queue: str | None = None,
) -> ToolContext:
    """A tool context for ``refs``; ``queue`` sends sandbox execs to a private worker."""
    return ToolContext(
        job_id=refs.job_id,
        session_id=refs.session_id,
        user_id=refs.user_id,
        project_id=refs.project_id,
        workspace=settings.workspaces_dir / refs.session_id,
        tool_call_id=call or f"call_{uuid.uuid4().hex[:8]}",
        step_key="tool:1:x",
        emit=lambda _t, _d: None,
        sandbox=CelerySandbox(celery_app, queue=queue or SANDBOX_QUEUE),
    )
