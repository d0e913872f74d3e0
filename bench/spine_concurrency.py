"""Concurrency efficiency: many jobs, each several slow model calls, on one worker.

200 jobs × 5 model calls at 200 ms simulated latency. If the runtime overlaps
all waiting perfectly every job takes 5 × 200 ms = 1.0 s and the batch takes
1.0 s; a runtime that serialises model calls would take 200 s. Reported:
achieved / ideal throughput (goal ≥ 0.9). Jobs are created directly in
Postgres and enqueued in one burst, so submission speed is not measured here.

    .venv/bin/python -m bench.spine_concurrency [--jobs 200 --calls 5 --latency-ms 200]

It also attributes CPU: seconds of CPU per ledger step for each process group
(agent workers, the Postgres backends of the run's database, a private Redis,
the simulator apart), next to three bare baselines measured in the same run —
a Celery no-op task round trip, one HTTP call to the simulator, one Postgres
insert — so each millisecond of Leaflab's cost per step can be placed.

The burst runs twice on the same workers (``--batches 2``): first on freshly
started ones, whose every database connection is new (a backend to start, each
hot statement to prepare and plan once per connection), then on warm ones, as a
worker that has been up for a while runs. Both are reported; they differ by
that one-time cost per connection, which a short run cannot amortise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import redis
from celery import Celery
from sqlalchemy import func, select

from bench.cpu_accounting import (
    CpuLedger,
    PidSource,
    pids_of,
    postgres_backends,
    postgres_shared,
)
from bench.cpu_baselines import (
    _redis_pid,
    celery_noop_baseline,
    postgres_insert_baseline,
    simulator_call_baseline,
)
from bench.scratch_stack import PG_ADMIN, ScratchStack, scratch_stack
from services.cli.up.commands import celery_worker_argv, model_sim_argv
from services.common.contracts.tasks import ADVANCE_TASK, AGENT_QUEUE
from services.common.db import build_engine, build_sessionmaker
from services.common.models import ChatSession, Job, JobStep, User
from services.worker.llm.client import ModelClient
from services.worker.spine.conversation import append_message
from tests.faults.private_servers import PrivateRedis
from tests.fixtures.processes import Proc, free_port, wait_http


def _create_jobs(factory, n: int, users: int) -> list[uuid.UUID]:  # type: ignore[no-untyped-def]
    """``n`` turn jobs, dealt round-robin to ``users`` members of the lab.

    Admission caps running jobs per user (``max_running_jobs_per_user``, 8 by
    default): with every job on one user the run would measure that fairness
    policy (8 jobs at a time), not how many agents a worker carries.
    """
    ids = []
    with factory() as db, db.begin():
        members = [User(email=f"bench-{uuid.uuid4().hex[:8]}@lab.test") for _ in range(users)]
        db.add_all(members)
        db.flush()
        for i in range(n):
            user = members[i % users]
            session = ChatSession(user_id=user.id)
            db.add(session)
            db.flush()
            job = Job(
                user_id=user.id,
                session_id=session.id,
                kind="turn",
                input={"content": "go"},
                max_turns=50,
                # As the API does: the advance message about to be sent is in flight.
                enqueued_at=datetime.now(UTC),
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


@dataclass
class Batch:
    """One burst of jobs: its makespan and what it cost."""

    makespan: float
    failed: int
    steps: int
    cpu: dict[str, float]  # CPU seconds per process group during the batch
    system: dict[str, float]  # of which in the kernel
    processes: dict[str, int]  # distinct processes per group during the batch
    redis_calls: dict[str, int]  # Redis commands the batch sent, by command


@dataclass
class RunResult:
    batches: list[Batch]  # the first on freshly started workers, then warm ones
    floor: float
    baselines: dict[str, dict[str, float]]  # per baseline: CPU ms per operation and group


def _run(
    scratch: ScratchStack, redis_url: str, rds: PrivateRedis, args: argparse.Namespace
) -> RunResult:
    """Enqueue every job of a batch in one burst, measuring makespan and CPU, once on
    freshly started workers and again on the same (warm) workers; then the baselines."""
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
        "LEAFLAB_REDIS_URL": redis_url,
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
        celery = Celery("bench", broker=redis_url)
        _wait_worker_ready(celery, args.processes)  # the clock starts only once the worker consumes
        groups = {
            "agent worker(s)": pids_of(*(w.popen.pid for w in workers)),
            "postgres backends": postgres_backends(PG_ADMIN, scratch.database_name),
            # Shared by every database on the server; counted in full against this run.
            "postgres server": postgres_shared(PG_ADMIN),
            "redis": pids_of(_redis_pid(rds)),
            "simulator (apart)": pids_of(sim.popen.pid),
            # This process alone: the servers above are its children.
            "bench driver": lambda: [os.getpid()],
        }
        batches = []
        for number in range(args.batches):
            ids = _create_jobs(factory, args.jobs, args.users)
            profile = args.profile / f"batch-{number + 1}" if args.profile else None
            batches.append(_batch(factory, celery, ids, groups, redis_url, workers, logs, profile))
        for worker in workers:
            worker.stop()  # the baselines get the CPU the workers had
        floor = _client_floor(f"http://127.0.0.1:{sim_port}", args)
        baselines = {
            "celery no-op round trip": celery_noop_baseline(
                redis_url, rds, logs, args.baseline_ops
            ),
            "http call to the simulator": simulator_call_baseline(
                f"http://127.0.0.1:{sim_port}", sim, args.baseline_ops
            ),
            "postgres insert": postgres_insert_baseline(scratch, args.baseline_ops),
        }
    finally:
        for worker in workers:
            worker.stop()
        sim.stop()
    return RunResult(batches, floor, baselines)


def _batch(  # type: ignore[no-untyped-def]
    factory,
    celery: Celery,
    ids: list[uuid.UUID],
    groups: dict[str, PidSource],
    redis_url: str,
    workers: list[Proc],
    logs: Path,
    profile: Path | None,
) -> Batch:
    # Sampled while running so that a backend exiting mid-batch is still counted.
    ledger = CpuLedger(groups, sample_s=0.2)
    profilers = [_profile(w, logs, profile) for w in workers] if profile else []
    commands_before = _redis_commands(redis_url)
    ledger.start()
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
    cpu = ledger.stop()
    redis_calls = _count_since(commands_before, _redis_commands(redis_url))
    for profiler in profilers:
        profiler.send_signal(signal.SIGINT)
        profiler.wait(60)
    with factory() as db:
        failed = (
            db.scalar(
                select(func.count()).select_from(Job).where(Job.id.in_(ids), Job.status == "failed")
            )
            or 0
        )
        steps = (
            db.scalar(select(func.count()).select_from(JobStep).where(JobStep.job_id.in_(ids))) or 0
        )
    return Batch(
        makespan,
        failed,
        int(steps),
        cpu,
        dict(ledger.system_s),
        dict(ledger.processes_seen),
        redis_calls,
    )


def _profile(worker: Proc, logs: Path, out_dir: Path) -> subprocess.Popen[bytes]:
    """py-spy (collapsed stacks, every thread, idle excluded) on one worker for the run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    py_spy = str(Path(sys.executable).parent / "py-spy")
    argv = [py_spy, "record", "--pid", str(worker.popen.pid), "--rate", "250", "--gil",
            "--format", "raw", "-o", str(out_dir / f"{worker.name}.txt")]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(logs / "py-spy.log", "ab"))  # noqa: SIM115


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


def _redis_commands(redis_url: str) -> dict[str, int]:
    """Calls per Redis command since the server started (``INFO commandstats``)."""
    client = redis.Redis.from_url(redis_url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return {name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in stats.items()}


def _count_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    grown = {name: calls - before.get(name, 0) for name, calls in after.items()}
    # The two INFO calls that take the counts are the bench's, not the run's.
    grown["info"] = grown.get("info", 0) - 1
    return {name: calls for name, calls in sorted(grown.items(), key=lambda kv: -kv[1]) if calls}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=250, help="threads per worker")
    parser.add_argument(
        "--users", type=int, default=25, help="lab members the jobs are dealt to (cap 8 each)"
    )
    parser.add_argument("--processes", type=int, default=1, help="worker processes")
    parser.add_argument("--baseline-ops", type=int, default=1000, help="operations per baseline")
    parser.add_argument(
        "--batches",
        type=int,
        default=2,
        help="bursts of --jobs on the same workers: the first measures freshly started "
        "workers (new database connections, statements planned), the next warm ones",
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="write py-spy profiles of the workers here"
    )
    args = parser.parse_args()

    redis_dir = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    # A private Redis: the machine's shared one serves other runs, whose CPU is not ours.
    rds = PrivateRedis(redis_dir, free_port())
    rds.start()
    try:
        with scratch_stack("concurrency", redis_db=False) as scratch:
            result = _run(scratch, rds.url(), rds, args)
    finally:
        rds.stop()
    _report(result, args)


def _report(result: RunResult, args: argparse.Namespace) -> None:
    ideal = args.calls * args.latency_ms / 1000
    floor = result.floor
    print(
        f"{args.jobs} jobs x {args.calls} model calls at {args.latency_ms} ms, "
        f"{args.processes} worker process(es) x {args.concurrency} threads, "
        f"{args.users} users, {len(result.batches)} batch(es) on the same workers"
    )
    print(
        f"ideal makespan {ideal:.2f} s (all waiting overlapped); "
        f"serialised model calls would take {args.jobs * ideal:.0f} s"
    )
    print(
        f"baseline: the same calls from bare ModelClient threads (no Leaflab): {floor:.2f} s "
        f"-> achieved/ideal {ideal / floor:.3f}"
    )
    for number, batch in enumerate(result.batches, start=1):
        state = "freshly started workers" if number == 1 else "warm workers"
        print(f"batch {number} ({state}), {batch.failed} failed:")
        _report_batch(batch, args, ideal, floor)
    print(f"baselines in the same run (CPU ms per operation, {args.baseline_ops} each):")
    for name, groups in result.baselines.items():
        parts = ", ".join(f"{group} {ms:.3f}" for group, ms in groups.items())
        print(f"  {name:28} total {sum(groups.values()):.3f} ms  ({parts})")


def _report_batch(batch: Batch, args: argparse.Namespace, ideal: float, floor: float) -> None:
    makespan = batch.makespan
    print(
        f"  achieved makespan {makespan:.2f} s -> achieved/ideal throughput "
        f"{ideal / makespan:.3f}; {args.jobs * ideal / makespan:.1f}x faster than serial; "
        f"Leaflab / client-only makespan {makespan / floor:.2f}x"
    )
    print(f"  CPU per ledger step ({batch.steps} steps: model calls and tool calls):")
    platform = 0.0
    for name, seconds in batch.cpu.items():
        per_step = 1000 * seconds / max(batch.steps, 1)
        kernel = 100 * batch.system.get(name, 0.0) / seconds if seconds else 0.0
        seen = batch.processes.get(name, 0)
        print(
            f"    {name:22} {per_step:7.2f} ms  ({seconds:.2f} CPU-s, {kernel:.0f} % kernel, "
            f"{seen} process{'es' if seen != 1 else ''})"
        )
        if name in ("agent worker(s)", "postgres backends", "postgres server", "redis"):
            platform += per_step
    print(f"    {'platform total':22} {platform:7.2f} ms  (workers + Postgres + Redis; goal <= 5)")
    calls = ", ".join(
        f"{name} {count / args.jobs:.1f}" for name, count in list(batch.redis_calls.items())[:10]
    )
    total = sum(batch.redis_calls.values())
    print(f"  Redis commands per job: {total / args.jobs:.1f} ({calls})")


if __name__ == "__main__":
    main()
