"""Leaflab: real turn jobs on a Celery worker, as bench/spine_concurrency.py runs them.

The simulator's default script (``leaflab_script``) makes each job call the model
three times with two ``glob`` tool calls between. Job rows are created before the
clock starts (the API's work, not a step's); the batch is one burst of advance
messages to a freshly started worker with ``threads`` threads, its Redis private,
its database a migrated scratch one.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from celery import Celery
from sqlalchemy import func, select

from bench.cpu_accounting import pids_of, postgres_backends
from bench.cpu_baselines import _redis_pid
from bench.peers.measure import Run, Window, libpq_url
from bench.peers.workload import STEPS
from bench.scratch_stack import PG_ADMIN, scratch_stack
from bench.spine_concurrency import _create_jobs, _wait_worker_ready
from services.cli.up.commands import celery_worker_argv
from services.common.contracts.tasks import ADVANCE_TASK, AGENT_QUEUE
from services.common.db import build_engine, build_sessionmaker
from services.common.models import Job, JobStep
from tests.faults.private_servers import PrivateRedis
from tests.fixtures.processes import Proc, free_port

# Admission runs at most 8 jobs per user at once: deal the jobs so the cap never binds.
JOBS_PER_USER = 8


def leaflab_script(latency_ms: int) -> dict[str, object]:
    """The simulator's default script: a tool call per model call but the last."""
    tool = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]}
    calls = STEPS.count("model")
    return {"latency_ms": latency_ms, "replies": [tool] * (calls - 1) + [{"content": "done"}]}


def run_leaflab(sim_url: str, jobs: int, threads: int, pool: int, logs: Path) -> Run:
    rds = PrivateRedis(Path(tempfile.mkdtemp(prefix="bench-peers-redis-")), free_port())
    rds.start()
    try:
        with scratch_stack("peers_leaflab", redis_db=False) as scratch:
            env = {
                "LEAFLAB_DATABASE_URL": scratch.database_url,
                "LEAFLAB_REDIS_URL": rds.url(),
                "LEAFLAB_LLM_BASE_URL": f"{sim_url}/v1",
                "LEAFLAB_HOME": str(logs),
                "LEAFLAB_DB_POOL_SIZE": str(pool),
                "LEAFLAB_WORKER_ID": "bench-peers",
            }
            os.environ.update(env)  # as spine_concurrency: the job rows are built with them
            argv = celery_worker_argv(
                "services.worker.app:app", AGENT_QUEUE, concurrency=threads,
                name="peers@%h", loglevel="WARNING", quiet_cluster=True,
            )  # fmt: skip
            worker = Proc("leaflab-worker", argv, env, logs)
            engine = build_engine(scratch.database_url, pool_size=5)
            try:
                factory = build_sessionmaker(engine)
                celery = Celery("bench-peers", broker=rds.url())
                _wait_worker_ready(celery, 1)
                ids = _create_jobs(factory, jobs, math.ceil(jobs / JOBS_PER_USER))
                engine.dispose()  # the creating backend exits and reports its rows first
                time.sleep(0.5)
                dsn = libpq_url(scratch.database_url)
                with psycopg.connect(dsn, autocommit=True) as poll:
                    backends = postgres_backends(PG_ADMIN, scratch.database_name)
                    groups = {
                        "workers": pids_of(worker.popen.pid),
                        # The bench's own polling backend is not Leaflab's cost.
                        "postgres": lambda: [p for p in backends() if p != poll.info.backend_pid],
                        "redis": pids_of(_redis_pid(rds)),
                    }
                    window = Window(groups, dsn)
                    window.start()
                    start = time.perf_counter()
                    for job_id in ids:
                        celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE)
                    _wait_done(poll, ids, start, logs)
                    makespan = time.perf_counter() - start
                    # The jobs' spans are written in batches after them (every 0.5 s):
                    # their CPU and WAL are the step's too, so the window waits for them.
                    _wait_spans_settled(poll)
                    cpu, wal = window.stop()
                worker.stop()
                failed, steps = _outcome(factory, ids)
                engine.dispose()
                rows = window.rows()
            finally:
                worker.stop()
                engine.dispose()
    finally:
        rds.stop()
    if steps != jobs * len(STEPS):
        print(f"leaflab: {steps} ledger steps, expected {jobs * len(STEPS)}", flush=True)
    return Run("leaflab", makespan, failed, jobs * len(STEPS), cpu, wal, rows)


def _wait_done(poll: psycopg.Connection, ids: list[uuid.UUID], start: float, logs: Path) -> None:
    query = "SELECT count(*) FROM jobs WHERE id = ANY(%s) AND status IN ('succeeded', 'failed')"
    while True:
        row = poll.execute(query, (ids,)).fetchone()
        if row and row[0] >= len(ids):
            return
        if time.perf_counter() - start > 600:
            raise SystemExit(f"leaflab timed out; see {logs}")
        time.sleep(0.05)


def _wait_spans_settled(poll: psycopg.Connection, quiet_s: float = 1.5) -> None:
    """Until the span rows stop growing for ``quiet_s`` (three export periods)."""
    last, since, deadline = -1, time.perf_counter(), time.perf_counter() + 60
    while time.perf_counter() < deadline:
        row = poll.execute("SELECT count(*) FROM spans").fetchone()
        count = int(row[0]) if row else 0
        if count != last:
            last, since = count, time.perf_counter()
        elif time.perf_counter() - since >= quiet_s:
            return
        time.sleep(0.1)


def _outcome(factory, ids: list[uuid.UUID]) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with factory() as db:
        failed = db.scalar(
            select(func.count()).select_from(Job).where(Job.id.in_(ids), Job.status == "failed")
        )
        steps = db.scalar(select(func.count()).select_from(JobStep).where(JobStep.job_id.in_(ids)))
    return int(failed or 0), int(steps or 0)
