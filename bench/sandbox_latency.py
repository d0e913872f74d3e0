"""Sandbox latency and throughput: `print(1)` through `sandbox.exec` (Celery round trip).

Compares, in one run:
  * bare cold   — `docker run --rm <hardened flags> IMAGE python3 -c 'print(1)'`
  * exec cold   — sandbox.exec for a new session with no warm pool (container created)
  * exec spare  — sandbox.exec for a new session that adopts a pre-started spare
  * exec warm   — sandbox.exec again in the same session (container reused):
                  python (forked by the in-container runner), bash (runner starts it),
                  and python with the runner off (one `docker exec` per call: the old path)
  * throughput  — concurrent execs from several clients, execs/s

Needs PostgreSQL, Redis and Docker (scripts/ensure_docker.sh) and the image
(`leaflab sandbox build-image`). Uses a scratch database and a leased Redis db,
both unique to the run (bench/scratch_stack.py).

    .venv/bin/python bench/sandbox_latency.py [--n 40] [--concurrency 4]
    .venv/bin/python bench/sandbox_latency.py --ab TREE,TREE[,...] [--n 100]

``--ab`` compares code versions instead: one sandbox worker per source tree (a
checkout or a ``git archive`` of a commit), each on its own queue, all at once;
warm python and bash execs alternate between them, so load hits every tree alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.scratch_stack import ScratchStack, scratch_stack  # noqa: E402
from services.cli.up.commands import celery_worker_argv  # noqa: E402


def prepare_env(home: Path, scratch: ScratchStack) -> None:
    os.environ.update(
        {
            "LEAFLAB_DATABASE_URL": scratch.database_url,
            "LEAFLAB_REDIS_URL": scratch.redis_url,
            "LEAFLAB_HOME": str(home),
            "LEAFLAB_ENV": "test",
        }
    )
    from services.common.db import build_engine
    from services.common.models import Base
    from services.common.models.sandbox import SandboxExecution

    engine = build_engine(scratch.database_url, pool_size=2)
    Base.metadata.create_all(engine, tables=[SandboxExecution.__table__])  # type: ignore[list-item]
    engine.dispose()


def make_job() -> tuple[str, uuid.UUID]:
    """A user and a turn job of theirs: the job id and the user's id."""
    from services.common.db import build_engine, build_sessionmaker
    from services.common.models import Job, User

    engine = build_engine(os.environ["LEAFLAB_DATABASE_URL"], pool_size=1)
    with build_sessionmaker(engine)() as s, s.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@example.org")
        s.add(user)
        s.flush()
        job = Job(user_id=user.id, kind="turn", input={})
        s.add(job)
        s.flush()
        job_id, user_id = str(job.id), user.id
    engine.dispose()
    return job_id, user_id


def new_session(user_id: uuid.UUID) -> str:
    """A chat session row of the user: the agent worker only ever sends existing ones."""
    from services.common.db import build_engine, build_sessionmaker
    from services.common.models import ChatSession

    engine = build_engine(os.environ["LEAFLAB_DATABASE_URL"], pool_size=1)
    with build_sessionmaker(engine)() as s, s.begin():
        session = ChatSession(user_id=user_id)
        s.add(session)
        s.flush()
        session_id = str(session.id)
    engine.dispose()
    return session_id


def start_worker(
    spares: int,
    concurrency: int,
    *,
    runner: bool = True,
    janitor_s: float | None = None,
    tree: Path = REPO,
    queue: str = "sandbox",
) -> subprocess.Popen[bytes]:
    """A sandbox worker; ``janitor_s`` shortens the janitor's period (the spare case needs
    its spares refilled between execs), else the deployment's default holds."""
    env = {
        **os.environ,
        **({"LEAFLAB_SANDBOX_JANITOR_INTERVAL_S": str(janitor_s)} if janitor_s else {}),
        "PYTHONPATH": str(tree),
        "LEAFLAB_SANDBOX_POOL_SPARES": str(spares),
        "LEAFLAB_SANDBOX_RUNNER": "true" if runner else "false",
    }
    proc = subprocess.Popen(
        celery_worker_argv(
            "services.sandbox.worker:app",
            queue,
            concurrency=concurrency,
            loglevel="WARNING",
            quiet_cluster=True,
        ),
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis.from_url(os.environ["LEAFLAB_REDIS_URL"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(f"/{proc.pid}/" in k.decode() for k in client.scan_iter("leaflab:sandbox:worker:*")):
            return proc
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("sandbox worker did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return f"p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  (n={len(ordered)})"


def timed(fn: Callable[[], object], n: int, pause: float = 0.0) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
        if pause:
            time.sleep(pause)
    return out


def exec_print_one(app: Any, queue: str, job_id: str, session: str, language: str) -> None:
    """One ``print(1)`` (or ``echo 1``) through the Celery hop, as an agent worker sends it."""
    r = app.send_task(
        "sandbox.exec",
        queue=queue,
        kwargs={
            "tool_call_id": uuid.uuid4().hex,
            "job_id": job_id,
            "session_id": session,
            "language": language,
            "code": "print(1)" if language == "python" else "echo 1",
        },
    ).get(timeout=60)
    assert r["stdout"] == "1\n", r


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--ab", default="", help="source trees to compare, comma-separated")
    args = parser.parse_args()
    home = Path(f"/tmp/leaflab-bench-sandbox-{os.getpid()}")
    with scratch_stack("sandbox") as scratch:
        prepare_env(home, scratch)
        if args.ab:
            run_ab([Path(t).resolve() for t in args.ab.split(",")], args.n)
        else:
            run(args)


def run_ab(trees: list[Path], n: int) -> None:
    """Warm execs alternated between one worker per tree; p50 per tree and language."""
    from services.common.celery_app import build_celery
    from services.sandbox.settings import get_sandbox_settings

    app = build_celery(get_sandbox_settings())
    job_id, user_id = make_job()
    workers = []
    try:
        sides = []
        for i, tree in enumerate(trees):
            queue = f"sandbox-ab-{i}"
            workers.append(start_worker(1, 4, tree=tree, queue=queue))
            sides.append((tree, queue, new_session(user_id)))
        for _ in range(10):  # more sessions of the user: the disk check measures them
            new_session(user_id)

        def once(queue: str, session: str, language: str) -> float:
            t0 = time.perf_counter()
            exec_print_one(app, queue, job_id, session, language)
            return (time.perf_counter() - t0) * 1000

        for _tree, queue, session in sides:
            for _ in range(3):
                once(queue, session, "python")
        samples: dict[tuple[Path, str], list[float]] = {}
        print("load before", " ".join(open("/proc/loadavg").read().split()[:3]))
        for i in range(n):
            order = sides if i % 2 == 0 else sides[::-1]
            for language in ("python", "bash"):
                for tree, queue, session in order:
                    samples.setdefault((tree, language), []).append(once(queue, session, language))
        print("load after", " ".join(open("/proc/loadavg").read().split()[:3]))
        for (tree, language), values in samples.items():
            print(f"{str(tree):40s} {language:6s} {percentiles(values)}")
    finally:
        for worker in workers:
            stop(worker)


def run(args: argparse.Namespace) -> None:

    from services.common.celery_app import build_celery
    from services.sandbox.image import ensure_image
    from services.sandbox.settings import get_sandbox_settings

    settings = get_sandbox_settings()
    image = ensure_image(settings)
    app = build_celery(settings)
    job_id, user_id = make_job()

    def exec_once(session: str, language: str = "python") -> None:
        exec_print_one(app, "sandbox", job_id, session, language)

    bare_flags = [
        "--network",
        "none",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--pids-limit",
        "128",
        "--memory",
        "512m",
        "--cpus",
        "1",
        "--user",
        "10001:10001",
        "--tmpfs",
        "/tmp:size=64m",
    ]
    n_cold = max(5, args.n // 4)
    results: dict[str, list[float]] = {}
    results["bare docker run (cold)"] = timed(
        lambda: subprocess.run(
            ["docker", "run", "--rm", *bare_flags, image, "python3", "-c", "print(1)"],
            check=True,
            capture_output=True,
        ),
        n_cold,
    )

    worker = start_worker(spares=0, concurrency=args.concurrency)
    try:
        fresh = iter([new_session(user_id) for _ in range(n_cold)])
        results["sandbox.exec cold (no pool)"] = timed(lambda: exec_once(next(fresh)), n_cold)
    finally:
        stop(worker)

    worker = start_worker(spares=0, concurrency=args.concurrency, runner=False)
    try:
        session = new_session(user_id)
        exec_once(session)
        results["sandbox.exec warm, docker exec (old)"] = timed(lambda: exec_once(session), args.n)
    finally:
        stop(worker)

    worker = start_worker(spares=2, concurrency=args.concurrency, janitor_s=0.5)
    try:
        time.sleep(2)
        # New sessions adopting a spare; pause so the janitor can refill spares.
        spare_sessions = iter([new_session(user_id) for _ in range(n_cold)])
        results["sandbox.exec new session, spare"] = timed(
            lambda: exec_once(next(spare_sessions)), n_cold, pause=1.5
        )
    finally:
        stop(worker)

    # Warm execs under the deployment's janitor period (a 0.5 s janitor lists the
    # containers twice a second, which the warm path would pay for beside it).
    worker = start_worker(spares=1, concurrency=args.concurrency)
    try:
        session = new_session(user_id)
        exec_once(session)
        results["sandbox.exec warm (same session)"] = timed(lambda: exec_once(session), args.n)
        results["sandbox.exec warm, bash"] = timed(lambda: exec_once(session, "bash"), args.n)
        sessions = [new_session(user_id) for _ in range(args.concurrency)]
        for s in sessions:
            exec_once(s)
        per_client = args.n
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(lambda s: [exec_once(s) for _ in range(per_client)], sessions))
        elapsed = time.perf_counter() - t0
    finally:
        stop(worker)

    print(f"image {image}; {os.cpu_count()} CPUs")
    for name, samples in results.items():
        print(f"{name:40s} {percentiles(samples)}")
    bare = statistics.median(results["bare docker run (cold)"])
    warm = statistics.median(results["sandbox.exec warm (same session)"])
    old = statistics.median(results["sandbox.exec warm, docker exec (old)"])
    print(f"warm p50 speed-up vs bare cold docker run: {bare / warm:.1f}x")
    print(f"warm p50 speed-up vs warm docker exec (runner off): {old / warm:.1f}x")
    total = per_client * args.concurrency
    print(
        f"throughput: {total} execs from {args.concurrency} concurrent clients in "
        f"{elapsed:.1f} s = {total / elapsed:.1f} execs/s"
    )


if __name__ == "__main__":
    main()
