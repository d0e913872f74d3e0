"""Concurrency efficiency: many jobs, each several slow model calls, on one worker.

200 jobs × 5 model calls at 200 ms simulated latency. If the runtime overlaps
all waiting perfectly every job takes 5 × 200 ms = 1.0 s and the batch takes
1.0 s; a runtime that serialises model calls would take 200 s. Reported:
achieved / ideal throughput (goal ≥ 0.9). Jobs are created directly in
Postgres and enqueued in one burst, so submission speed is not measured here.

    .venv/bin/python -m bench.spine_concurrency [--jobs 200 --calls 5 --latency-ms 200]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from celery import Celery
from sqlalchemy import func, select

from bench.scratch_stack import ScratchStack, scratch_stack
from services.cli.up.commands import celery_worker_argv, model_sim_argv
from services.common.db import build_engine, build_sessionmaker
from services.common.models import ChatSession, Job, User
from services.common.task_names import ADVANCE_TASK, AGENT_QUEUE
from services.worker.llm.client import ModelClient
from services.worker.runtime.conversation import append_message
from tests.fixtures.processes import Proc, free_port, wait_http


def _create_jobs(factory, n: int) -> list[uuid.UUID]:  # type: ignore[no-untyped-def]
    ids = []
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:6]}@lab.test")
        db.add(user)
        db.flush()
        for _ in range(n):
            session = ChatSession(user_id=user.id)
            db.add(session)
            db.flush()
            job = Job(
                user_id=user.id,
                session_id=session.id,
                kind="turn",
                input={"content": "go"},
                max_turns=50,
            )
            db.add(job)
            db.flush()
            append_message(db, session_id=session.id, job_id=job.id, role="user", content="go")
            ids.append(job.id)
    return ids


def _wait_worker_ready(celery: Celery, processes: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(celery.control.ping(timeout=1.0)) >= processes:
            return
    raise SystemExit("the worker did not start")


def _run(scratch: ScratchStack, args: argparse.Namespace) -> tuple[float, int, float]:
    """Enqueue every job in one burst; (makespan s, failed jobs, client-only makespan s)."""
    logs = Path(tempfile.mkdtemp())
    tool = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.md"}}]}
    script = {
        "latency_ms": args.latency_ms,
        "replies": [tool] * (args.calls - 1) + [{"content": "done"}],
    }
    (logs / "script.json").write_text(json.dumps(script))
    sim_port = free_port()
    env = {
        "LEAFLAB_DATABASE_URL": scratch.database_url,
        "LEAFLAB_REDIS_URL": scratch.redis_url,
        "LEAFLAB_LLM_BASE_URL": f"http://127.0.0.1:{sim_port}/v1",
        "LEAFLAB_HOME": str(logs),
        "LEAFLAB_DB_POOL_SIZE": "40",
        "LEAFLAB_WORKER_ID": "bench",
    }
    script_path = str(logs / "script.json")
    sim = Proc("sim", model_sim_argv(port=sim_port, script=script_path), env, logs)
    workers = [
        Proc(
            f"worker-{i}",
            celery_worker_argv(
                "services.worker.app:app",
                AGENT_QUEUE,
                concurrency=args.concurrency,
                name=f"bench{i}@%h",
                loglevel="WARNING",
                quiet_cluster=True,
            ),
            env,
            logs,
        )
        for i in range(args.processes)
    ]
    try:
        wait_http(f"http://127.0.0.1:{sim_port}/healthz", sim)
        os.environ.update(env)
        factory = build_sessionmaker(build_engine(scratch.database_url, pool_size=5))
        celery = Celery("bench", broker=scratch.redis_url)
        _wait_worker_ready(celery, args.processes)  # the clock starts only once the worker consumes
        ids = _create_jobs(factory, args.jobs)
        start = time.perf_counter()
        for job_id in ids:
            celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE)
        while True:
            with factory() as db:
                done = (
                    db.scalar(
                        select(func.count())
                        .select_from(Job)
                        .where(Job.id.in_(ids), Job.status.in_(("succeeded", "failed")))
                    )
                    or 0
                )
            if done >= len(ids):
                break
            if time.perf_counter() - start > 600:
                raise SystemExit(f"timed out with {done}/{len(ids)} done; see {logs}")
            time.sleep(0.05)
        makespan = time.perf_counter() - start
        with factory() as db:
            failed = (
                db.scalar(
                    select(func.count())
                    .select_from(Job)
                    .where(Job.id.in_(ids), Job.status == "failed")
                )
                or 0
            )
        for worker in workers:
            worker.stop()  # the baseline gets the CPU the workers had
        floor = _client_floor(f"http://127.0.0.1:{sim_port}", args)
    finally:
        for worker in workers:
            worker.stop()
        sim.stop()
    return makespan, failed, floor


def _client_floor(sim_url: str, args: argparse.Namespace) -> float:
    """Baseline: the same model calls made by bare ModelClients (one thread per job,
    its calls in sequence, no Leaflab), against the same simulator; makespan in s."""
    total = args.jobs * args.calls
    script = {"latency_ms": args.latency_ms, "replies": [{"content": "done"}] * (total + 10)}
    httpx.put(f"{sim_url}/_sim/scripts/bench-floor", json=script).raise_for_status()
    client = ModelClient(f"{sim_url}/v1", "k", timeout_s=60, max_retries=0)
    messages = [{"role": "user", "content": "go"}]

    def job(_: int) -> None:
        for _call in range(args.calls):
            client.complete(
                model="m", messages=messages, max_tokens=16, conversation_key="bench-floor"
            )

    threads = min(args.jobs, args.concurrency * args.processes)
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(job, range(args.jobs)))
        elapsed = time.perf_counter() - start
    client.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=250, help="threads per worker")
    parser.add_argument("--processes", type=int, default=1, help="worker processes")
    args = parser.parse_args()

    with scratch_stack("concurrency") as scratch:
        makespan, failed, floor = _run(scratch, args)
    ideal = args.calls * args.latency_ms / 1000
    print(
        f"{args.jobs} jobs x {args.calls} model calls at {args.latency_ms} ms, "
        f"{args.processes} worker process(es) x {args.concurrency} threads, {failed} failed"
    )
    print(
        f"ideal makespan {ideal:.2f} s (all waiting overlapped); "
        f"serialised model calls would take {args.jobs * ideal:.0f} s"
    )
    print(f"achieved makespan {makespan:.2f} s -> achieved/ideal throughput {ideal / makespan:.3f}")
    print(
        f"baseline: the same calls from bare ModelClient threads (no Leaflab): {floor:.2f} s "
        f"-> achieved/ideal {ideal / floor:.3f}; "
        f"Leaflab / client-only makespan {makespan / floor:.2f}x"
    )


if __name__ == "__main__":
    main()
