"""Where one warm sandbox exec spends its time: phases, statements, Redis commands, walks.

Two views of the same warm ``print(1)`` in one session's container:

  * in process — a ``SandboxRuntime`` of the profiled tree runs the exec in this
    process (no Celery); each phase (claim, disk measures, artifact scans, the
    runner round trip, events, finish, ...) is timed by wrapping it, and the run
    counts Postgres statements, Redis round trips, directory scans and threads
    started per exec;
  * through Celery — a sandbox worker of the tree answers ``sandbox.exec`` as in
    ``sandbox_latency.py``; Redis ``MONITOR`` on the run's own db counts every
    command the hop sends (caller and worker), per exec.

    PYTHONPATH=$PWD .venv/bin/python bench/sandbox_exec_profile.py [--n 60] [--tree PATH]

``--tree`` profiles another checkout's code (e.g. ``/work/main``) with this script.
The phase names are looked up in the tree; a phase a tree does not have is not shown.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PHASES = [
    # (module, attribute, label): wrapped where the tree has it.
    ("services.sandbox.inflight", "InFlight.add", "inflight add"),
    ("services.sandbox.inflight", "InFlight.remove", "inflight remove"),
    ("services.sandbox.executions", "claim", "claim (Postgres)"),
    ("services.sandbox.executions", "finish", "finish (Postgres)"),
    ("services.sandbox.quota", "Owners.of", "owner lookup"),
    ("services.sandbox.quota", "allowance", "disk: allowance (walks)"),
    ("services.sandbox.quota", "user_sessions", "disk: user's sessions (Postgres)"),
    ("services.sandbox.quota", "file_sizes", "disk: file sizes (walk)"),
    ("services.sandbox.quota", "enforce_after", "disk: after-check (walk)"),
    ("services.sandbox.artifacts", "snapshot", "artifacts: snapshot (walk)"),
    ("services.sandbox.artifacts", "collect", "artifacts: collect (walk)"),
    ("services.sandbox.workspace_scan", "scan", "workspace scan (walk)"),
    ("services.sandbox.workspace_scan", "measure_others", "disk: other workspaces (walks)"),
    ("services.common.events", "EventPublisher.publish", "events (Redis)"),
    ("services.sandbox.backends.docker.pool", "WarmPool.checkout", "pool checkout"),
    ("services.sandbox.backends.docker.pool", "WarmPool.checkin", "pool checkin"),
    ("services.sandbox.runner.channel", "RunnerChannel.run", "runner round trip"),
    ("services.sandbox.backends.docker.backend", "DockerBackend.execute", "backend.execute"),
    ("services.sandbox.service", "SandboxRuntime.run", "run (total)"),
]


class Recorder:
    """Durations per label for the exec being measured (any thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current: dict[str, float] = defaultdict(float)
        self.counts: Counter[str] = Counter()
        self.per_exec: list[dict[str, float]] = []
        self.per_exec_counts: list[Counter[str]] = []

    def add(self, label: str, ms: float) -> None:
        with self.lock:
            self.current[label] += ms

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def next_exec(self) -> None:
        with self.lock:
            self.per_exec.append(dict(self.current))
            self.per_exec_counts.append(self.counts)
            self.current = defaultdict(float)
            self.counts = Counter()

    def reset(self) -> None:
        with self.lock:
            self.current, self.counts = defaultdict(float), Counter()
            self.per_exec, self.per_exec_counts = [], []


def _resolve(module: str, dotted: str) -> tuple[Any, str] | None:
    import importlib

    try:
        owner: Any = importlib.import_module(module)
    except ImportError:
        return None
    *path, attr = dotted.split(".")
    for name in path:
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    return (owner, attr) if hasattr(owner, attr) else None


def instrument(rec: Recorder) -> None:
    """Wrap every phase the tree has, and count scans and thread starts."""
    for module, dotted, label in PHASES:
        found = _resolve(module, dotted)
        if found is None:
            continue
        owner, attr = found
        original = getattr(owner, attr)

        def timed(*a: Any, _f: Callable[..., Any] = original, _l: str = label, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                rec.add(_l, (time.perf_counter() - t0) * 1000)

        setattr(owner, attr, timed)
    real_scandir = os.scandir

    def scandir(*a: Any, **k: Any) -> Any:
        rec.count("directory scans")
        return real_scandir(*a, **k)

    os.scandir = scandir  # type: ignore[assignment]
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        rec.count("threads started")
        real_start(self)

    threading.Thread.start = start  # type: ignore[method-assign]


def count_round_trips(rec: Recorder) -> None:
    """One Redis round trip = one packed send (a pipeline's commands go in one)."""
    import redis.connection

    real = redis.connection.AbstractConnection.send_packed_command

    def send(self: Any, command: Any, check_health: bool = True) -> None:
        rec.count("Redis round trips")
        real(self, command, check_health)

    redis.connection.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def in_process(n: int, job_id: str, session: str, rec: Recorder) -> None:
    from sqlalchemy import event

    from services.sandbox.service import SandboxRuntime
    from services.sandbox.settings import get_sandbox_settings

    runtime = SandboxRuntime(get_sandbox_settings())
    event.listen(
        runtime.engine, "before_cursor_execute", lambda *a, **k: rec.count("Postgres statements")
    )
    runtime.start()
    try:

        def once(language: str) -> float:
            t0 = time.perf_counter()
            result = runtime.run(
                {
                    "tool_call_id": uuid.uuid4().hex,
                    "job_id": job_id,
                    "session_id": session,
                    "language": language,
                    "code": "print(1)" if language == "python" else "echo 1",
                },
                task_id=uuid.uuid4().hex,
            )
            ms = (time.perf_counter() - t0) * 1000
            assert result.get("stdout") == "1\n", result
            return ms

        for _ in range(3):
            once("python")
        rec.reset()
        totals = []
        for _ in range(n):
            totals.append(once("python"))
            rec.next_exec()
    finally:
        runtime.close()
    print(f"in process, warm python, {n} execs: p50 {p50(totals):.2f} ms")
    labels = sorted({k for e in rec.per_exec for k in e}, key=lambda k: -p50(_col(rec, k)))
    for label in labels:
        print(f"  {label:36s} p50 {p50(_col(rec, label)):7.3f} ms")
    kinds = sorted({k for c in rec.per_exec_counts for k in c})
    for kind in kinds:
        print(f"  {kind:36s} {p50([float(c[kind]) for c in rec.per_exec_counts]):7.1f} per exec")


def _col(rec: Recorder, label: str) -> list[float]:
    return [e.get(label, 0.0) for e in rec.per_exec]


@contextmanager
def monitored(redis_url: str) -> Iterator[Counter[str]]:
    """Every command sent to the run's Redis db meanwhile, by name."""
    import redis

    client = redis.Redis.from_url(redis_url)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    seen: Counter[str] = Counter()
    stop = threading.Event()
    ready = threading.Event()

    def follow() -> None:
        with client.monitor() as mon:
            ready.set()
            for cmd in mon.listen():
                if stop.is_set():
                    return
                if int(cmd.get("db", -1)) == db:
                    seen[cmd["command"].split(" ", 1)[0].upper()] += 1

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    ready.wait(5)
    time.sleep(0.2)
    try:
        yield seen
    finally:
        stop.set()
        client.ping()  # wakes the monitor loop
        thread.join(timeout=5)


def through_celery(n: int, job_id: str, session: str, tree: Path, redis_url: str) -> None:
    from bench.sandbox_latency import exec_print_one, start_worker, stop
    from services.common.celery_app import build_celery
    from services.sandbox.settings import get_sandbox_settings

    app = build_celery(get_sandbox_settings())
    worker = start_worker(1, 4, tree=tree)
    try:
        for _ in range(3):
            exec_print_one(app, "sandbox", job_id, session, "python")
        totals = []
        for _ in range(n):
            t0 = time.perf_counter()
            exec_print_one(app, "sandbox", job_id, session, "python")
            totals.append((time.perf_counter() - t0) * 1000)
        print(f"through Celery, warm python, {n} execs: p50 {p50(totals):.2f} ms")
        execs = 20
        with monitored(redis_url) as seen:
            for _ in range(execs):
                exec_print_one(app, "sandbox", job_id, session, "python")
            time.sleep(0.3)
        # The worker's idle polling (BRPOP timeouts, the janitor) is counted too.
        print(f"  Redis commands per exec (MONITOR over {execs} execs, both sides):")
        for name, count in seen.most_common():
            print(f"    {name:20s} {count / execs:5.2f}")
        print(f"    {'total':20s} {sum(seen.values()) / execs:5.2f}")
    finally:
        stop(worker)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--tree", default="", help="checkout whose code is profiled")
    parser.add_argument("--skip-celery", action="store_true")
    args = parser.parse_args()
    tree = Path(args.tree).resolve() if args.tree else Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(tree))
    from bench.sandbox_latency import make_job, new_session, prepare_env
    from bench.scratch_stack import scratch_stack

    print("tree", tree, "load", " ".join(open("/proc/loadavg").read().split()[:3]))
    home = Path(f"/tmp/leaflab-bench-sandbox-profile-{os.getpid()}")
    with scratch_stack("sandbox_profile") as scratch:
        prepare_env(home, scratch)
        os.environ["PYTHONPATH"] = str(tree)
        job_id, user_id = make_job()
        for _ in range(10):  # more sessions of the user: the disk check measures them
            new_session(user_id)
        rec = Recorder()
        instrument(rec)
        count_round_trips(rec)
        in_process(args.n, job_id, new_session(user_id), rec)
        if not args.skip_celery:
            through_celery(args.n, job_id, new_session(user_id), tree, scratch.redis_url)
    print("load after", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
