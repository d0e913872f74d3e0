"""Chaos under load: seeded kill -9s of agent and sandbox workers while jobs run.

Every job writes a chain file, edits it, runs model-written Python in a Docker
sandbox (which appends a line to ``runs.txt``: a non-idempotent effect) and
edits again. A seeded RNG picks which worker to kill -9 and when (once it has
booted and consumes work); a supervisor loop restarts it at once. At the end:
no job lost, every edit in the file exactly once, no sandbox run repeated, no
lease held, no container left over.

The issue's size: 50 jobs and up to 100 kills, one every 0.2-1 s. Each kill
here is of a worker that has finished booting (a kill during boot tests
nothing), and a restarted worker costs about 3 s of CPU to boot, so the full
run took 292 s on a shared 2-core machine at load ~19 (60 kills: ~130 s;
``LEAFLAB_CHAOS_KILLS`` sets the count). Kills stop once every job is over.
The seed fixes the sequence of choices; which workers are booted at each
moment, and so the victims, depend on timing.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import docker
import httpx
import pytest
from sqlalchemy import select

from services.cli.up.commands import celery_worker_argv
from services.common.contracts.tasks import SANDBOX_QUEUE
from services.common.models import Job, Message
from services.common.models.sandbox import SandboxExecution
from services.sandbox.backends.docker.containers import LABEL, LABEL_OWNER
from tests.faults.chains import MARKER, expected_chain
from tests.faults.conftest import FaultStack
from tests.faults.load import ChainJob, wait_all_terminal
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Proc, Services

JOBS = int(os.environ.get("LEAFLAB_CHAOS_JOBS", "50"))
KILLS = int(os.environ.get("LEAFLAB_CHAOS_KILLS", "100"))
SEED = int(os.environ.get("LEAFLAB_CHAOS_SEED", "20261130"))
AGENT_WORKERS = 3
SANDBOX_WORKERS = 2
EDITS = 3
CELERY_READY = " ready."  # celery's "celery@<name> ready." once it consumes
RUN_CODE = "open('runs.txt', 'a').write('run\\n')\nprint(sum(range(10)))\n"


def chaos_script() -> dict:
    """write, edit 1, python, edit 2, edit 3, answer."""

    def edit(i: int) -> dict:
        args = {"path": "chain.txt", "old_string": MARKER, "new_string": f"edit {i}\n{MARKER}"}
        return {"tool_calls": [{"name": "edit_file", "arguments": args}]}

    write = {"path": "chain.txt", "content": f"edits:\n{MARKER}\n"}
    return {
        "latency_ms": 50,
        "replies": [
            {"tool_calls": [{"name": "write_file", "arguments": write}]},
            edit(1),
            {"tool_calls": [{"name": "python", "arguments": {"code": RUN_CODE, "timeout": 5}}]},
            edit(2),
            edit(3),
            {"content": "chaos survived"},
        ],
    }


@dataclass
class Supervisor:
    """Keeps a fixed set of worker slots filled, like systemd or Kubernetes would."""

    services: Services
    slots: dict[str, Callable[[], Proc]]
    running: dict[str, Proc] = field(default_factory=dict)
    pids: dict[str, list[int]] = field(default_factory=dict)
    kills: list[str] = field(default_factory=list)

    def start_all(self) -> None:
        for name in self.slots:
            self.restart(name)

    def restart(self, name: str) -> None:
        proc = self.slots[name]()
        self.running[name] = proc
        self.pids.setdefault(name, []).append(proc.popen.pid)

    def ready(self, timeout_s: float = 90) -> list[str]:
        """Slots whose worker consumes tasks (a kill during boot tests nothing); waits for one."""
        deadline = time.monotonic() + timeout_s
        while True:
            ready = [n for n, p in sorted(self.running.items()) if CELERY_READY in p.log()]
            if ready:
                return ready
            assert time.monotonic() < deadline, "no worker became ready"
            time.sleep(0.1)

    def kill_and_restart(self, name: str) -> None:
        self.running[name].kill9()
        self.kills.append(name)
        self.restart(name)


def agent_worker(svc: Services, name: str) -> Callable[[], Proc]:
    return lambda: svc.worker(name, concurrency=6)


def sandbox_worker(svc: Services, name: str) -> Callable[[], Proc]:
    """A sandbox worker (Docker backend; limits from the sandbox suite's SANDBOX_ENV)."""

    def start() -> Proc:
        argv = celery_worker_argv(
            "services.sandbox.worker:app", SANDBOX_QUEUE, concurrency=4, quiet_cluster=True
        )
        proc = Proc(f"{name}-{len(svc.procs)}", argv, svc.env, svc.log_dir)
        svc.procs.append(proc)
        return proc

    return start


def submit(url: str, key: str, sim_url: str) -> list[ChainJob]:
    headers = {"Authorization": f"Bearer {key}"}
    jobs = []
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for _ in range(JOBS):
            session = client.post("/v1/sessions", json={}).json()
            httpx.put(
                f"{sim_url.removesuffix('/v1')}/_sim/scripts/{session['id']}",
                json=chaos_script(),
                timeout=5,
            ).raise_for_status()
            job_id = client.post(
                f"/v1/sessions/{session['id']}/messages", json={"content": "chaos"}
            ).json()["job_id"]
            jobs.append(ChainJob(job_id, session["id"]))
    return jobs


def all_terminal(fs: FaultStack, jobs: list[ChainJob]) -> bool:
    ids = [uuid.UUID(j.job_id) for j in jobs]
    with fs.factory() as db:
        statuses = db.scalars(select(Job.status).where(Job.id.in_(ids))).all()
    return all(s not in ("queued", "running") for s in statuses)


@pytest.mark.slow
class TestChaos:
    def test_seeded_kills_lose_no_job_and_repeat_no_effect(
        self, fault_stack: FaultStack, sandbox_image: str, docker_ready: docker.DockerClient
    ) -> None:
        svc = fault_stack.services
        # A kill every 0.2-1 s can take a job's worker down several slices in a row
        # before it finishes a step; that is this test's load, not a poison job, so
        # the give-up (tests/worker/test_lost_slices.py) is out of its way.
        svc.env["LEAFLAB_MAX_LOST_SLICES"] = "1000"
        sim = svc.simulator()
        url = svc.api()
        slots = {f"agent{i}": agent_worker(svc, f"agent{i}") for i in range(AGENT_WORKERS)}
        slots |= {f"sandbox{i}": sandbox_worker(svc, f"sandbox{i}") for i in range(SANDBOX_WORKERS)}
        supervisor = Supervisor(svc, slots)
        supervisor.start_all()
        user = make_user(fault_stack.factory)
        jobs = submit(url, user.key, sim.url)

        rng = random.Random(SEED)
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 1.0))
            if all_terminal(fault_stack, jobs):
                break
            supervisor.kill_and_restart(rng.choice(supervisor.ready()))
        assert supervisor.kills, "the jobs finished before any kill: the test tested nothing"

        statuses = wait_all_terminal(fault_stack.factory, jobs, timeout_s=240)
        print(f"chaos: {len(supervisor.kills)} kills (seed {SEED}): {supervisor.kills}")
        assert set(statuses.values()) == {"succeeded"}, statuses
        self._no_effect_repeated(fault_stack, jobs)
        self._no_lease_held(fault_stack, jobs)
        self._no_container_left(svc, supervisor, docker_ready)

    @staticmethod
    def _no_effect_repeated(fs: FaultStack, jobs: list[ChainJob]) -> None:
        ran = 0
        for job in jobs:
            workspace = fs.home / "workspaces" / job.session_id
            assert (workspace / "chain.txt").read_text() == expected_chain(EDITS), job
            runs = workspace / "runs.txt"
            lines = runs.read_text().splitlines() if runs.exists() else []
            # Once, or not at all when the run was interrupted by a kill (reported
            # to the model as interrupted, never silently run again).
            assert len(lines) <= 1, (job, lines)
            ran += len(lines)
            with fs.factory() as db:
                calls = db.scalars(
                    select(Message.tool_call_id).where(
                        Message.job_id == uuid.UUID(job.job_id), Message.role == "tool"
                    )
                ).all()
            assert len(calls) == len(set(calls)) == EDITS + 2, (job, calls)
        print(f"chaos: python ran in {ran}/{len(jobs)} jobs")

    @staticmethod
    def _no_lease_held(fs: FaultStack, jobs: list[ChainJob]) -> None:
        ids = [uuid.UUID(j.job_id) for j in jobs]
        with fs.factory() as db:
            held = db.execute(
                select(Job.id, Job.lease_owner, Job.lease_until).where(
                    Job.id.in_(ids), (Job.lease_owner.is_not(None)) | (Job.lease_until.is_not(None))
                )
            ).all()
            executions = db.execute(
                select(SandboxExecution.status, SandboxExecution.exec_key)
            ).all()
        assert held == []
        print(f"chaos: sandbox executions by status: {sorted(s for s, _ in executions)}")

    @staticmethod
    def _no_container_left(
        svc: Services, supervisor: Supervisor, client: docker.DockerClient
    ) -> None:
        live = {p.popen.pid for n, p in supervisor.running.items() if n.startswith("sandbox")}
        dead = {
            pid for n, pids in supervisor.pids.items() if n.startswith("sandbox") for pid in pids
        }
        dead -= live
        # Containers of killed workers: reaped by a live worker's janitor.
        _wait_no_containers(client, dead)
        # A graceful stop drains each live worker's own pool.
        for name, proc in supervisor.running.items():
            if name.startswith("sandbox"):
                proc.stop()
        _wait_no_containers(client, live)


def _containers_of(client: docker.DockerClient, pids: set[int]) -> list[str]:
    # The low-level list answers in one call; the high-level one fetches each
    # container afterwards and fails on one a janitor removed in between.
    rows = client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    owners = {row["Id"]: (row.get("Labels") or {}).get(LABEL_OWNER, "") for row in rows}
    return [cid for cid, owner in owners.items() if any(f"/{pid}/" in owner for pid in pids)]


def _wait_no_containers(client: docker.DockerClient, pids: set[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    left = _containers_of(client, pids)
    while left and time.monotonic() < deadline:
        time.sleep(1)
        left = _containers_of(client, pids)
    assert left == [], f"containers of this run left behind: {left}"
