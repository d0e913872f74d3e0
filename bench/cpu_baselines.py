"""Bare operations Leaflab is built from, measured as CPU ms per operation.

Each baseline runs after the main benchmark, on the same servers, so the
per-step figures of the agent runtime can be read against them: how much of a
step is a Celery hop, an HTTP call, a Postgres write — and how much is Leaflab.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import httpx
import psycopg
import redis
from celery import Celery

from bench.cpu_accounting import CpuLedger, pids_of, postgres_backends
from bench.scratch_stack import PG_ADMIN, ScratchStack
from tests.faults.private_servers import PrivateRedis
from tests.fixtures.processes import Proc

NOOP_QUEUE = "bench-noop"


def _redis_pid(rds: PrivateRedis) -> int:
    assert rds.proc is not None
    return rds.proc.pid


def _per_op(cpu: dict[str, float], ops: int) -> dict[str, float]:
    return {name: 1000 * seconds / ops for name, seconds in cpu.items()}


def celery_noop_baseline(
    redis_url: str, rds: PrivateRedis, logs: Path, ops: int
) -> dict[str, float]:
    """Send ``ops`` no-op tasks to a threads-pool worker and wait until all ran."""
    env = {"BENCH_BROKER_URL": redis_url}
    argv = [
        sys.executable, "-m", "celery", "-A", "bench.noop_celery:app", "worker",
        "-Q", NOOP_QUEUE, "--pool", "threads", "-c", "16", "--loglevel", "WARNING",
        "--without-mingle", "--without-gossip", "--without-heartbeat",
    ]  # fmt: skip
    worker = Proc("noop-worker", argv, env, logs)
    app = Celery("bench-noop-client", broker=redis_url)
    client = redis.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + 60
        while not app.control.ping(timeout=1.0):
            if time.monotonic() > deadline:
                raise SystemExit("the no-op worker did not start")
        ledger = CpuLedger(
            {
                "celery worker": pids_of(worker.popen.pid),
                "redis": pids_of(_redis_pid(rds)),
                "client": pids_of(os.getpid()),
            }
        )
        ledger.start()
        for _ in range(ops):
            app.send_task("bench.noop", queue=NOOP_QUEUE, ignore_result=True)
        # Done when the queue is empty and no message is still unacknowledged.
        while client.llen(NOOP_QUEUE) or client.hlen("unacked"):
            time.sleep(0.01)
        return _per_op(ledger.stop(), ops)
    finally:
        worker.stop()


def simulator_call_baseline(sim_url: str, sim: Proc, ops: int) -> dict[str, float]:
    """``ops`` sequential chat completions from one httpx client (no latency script)."""
    httpx.put(
        f"{sim_url}/_sim/scripts/bench-http",
        json={"replies": [{"content": "ok"}] * (ops + 5)},
    ).raise_for_status()
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}],
        "max_tokens": 16,
        "user": "bench-http",
    }
    ledger = CpuLedger({"client": pids_of(os.getpid()), "simulator": pids_of(sim.popen.pid)})
    with httpx.Client(base_url=f"{sim_url}/v1", timeout=30) as client:
        ledger.start()
        for _ in range(ops):
            client.post(
                "/chat/completions", json=body, headers={"x-leaflab-conversation": "bench-http"}
            ).raise_for_status()
        return _per_op(ledger.stop(), ops)


def postgres_insert_baseline(scratch: ScratchStack, ops: int) -> dict[str, float]:
    """``ops`` single-row inserts, each its own autocommitted statement."""
    dsn = scratch.database_url.replace("+psycopg", "")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_insert (id bigserial, payload jsonb)")
        ledger = CpuLedger(
            {
                "postgres backend": postgres_backends(PG_ADMIN, scratch.database_name),
                "client": pids_of(os.getpid()),
            }
        )
        ledger.start()
        for i in range(ops):
            conn.execute("INSERT INTO bench_insert (payload) VALUES (%s)", (f'{{"i": {i}}}',))
        return _per_op(ledger.stop(), ops)
