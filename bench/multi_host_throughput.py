"""Jobs per second with one agent-worker host, then two (issue 14's scale-out figure).

The hosts are network namespaces on a private bridge, as in the multi-host test
(tests/faults/lan.py): the data host (private Postgres, Redis and the model
simulator), an API host and two worker hosts, each service started with
`leaflab serve ROLE`. The same batch of jobs is run twice: with worker-a alone,
then with worker-a and worker-b. Each job is a turn of ``--calls`` model calls
(tool rounds of the `todo` tool, then an answer) at ``--latency-ms``.

Both "hosts" share this machine's cores, so the figure shows what a second
worker host adds when a host's concurrency (``-c``), not the CPU, is the limit;
on real hosts each brings its own cores too. Needs root (namespaces).

    .venv/bin/python -m bench.multi_host_throughput --jobs 48 --calls 3 --latency-ms 300 -c 8
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from services.common.telemetry.names import SPAN_JOB
from tests.faults.conftest import FaultStack, start_fault_stack, stop_fault_stack
from tests.faults.lan import DATA_ADDR, Host, lan
from tests.fixtures.builders import TestUser, make_user, wait_job
from tests.fixtures.processes import FAST_RUNTIME_ENV, Proc, free_port, wait_http

LEAFLAB = str(Path(sys.executable).parent / "leaflab")
HOSTS = ["api", "worker-a", "worker-b"]


def _script(calls: int, latency_ms: int) -> dict[str, object]:
    todo = {"name": "todo", "arguments": {"items": [{"content": "read", "status": "completed"}]}}
    rounds: list[dict[str, object]] = [{"tool_calls": [todo]} for _ in range(calls - 1)]
    return {"latency_ms": latency_ms, "replies": [*rounds, {"content": "done"}]}


class Bench:
    def __init__(self, hosts: dict[str, Host], fs: FaultStack, tmp: Path, args: argparse.Namespace):
        self.hosts, self.fs, self.tmp, self.args = hosts, fs, tmp, args
        sim_port = free_port()
        self.sim_url = f"http://{DATA_ADDR}:{sim_port}"
        self.env = {
            **FAST_RUNTIME_ENV,
            "LEAFLAB_ENV": "test",
            "LEAFLAB_DATABASE_URL": fs.pg.url(host=DATA_ADDR),
            "LEAFLAB_REDIS_URL": fs.redis.url(host=DATA_ADDR),
            "LEAFLAB_INTERNAL_TOKEN": secrets.token_hex(16),
            "LEAFLAB_LLM_BASE_URL": f"{self.sim_url}/v1",
            "LEAFLAB_WORKSPACE_ROOT": str(tmp / "workspaces"),
            # Slices as long as a deployment's: a job stays on the host that took it.
            "LEAFLAB_TIME_SLICE_S": "120",
            "LEAFLAB_LEASE_TTL_S": "60",
        }
        script = tmp / "script.json"
        script.write_text(json.dumps(_script(args.calls, args.latency_ms)))
        argv = [LEAFLAB, "serve", "model-sim", "--host", DATA_ADDR, "--port", str(sim_port)]
        sim = Proc("model-sim", argv, {**self.env, "LEAFLAB_SIM_SCRIPT": str(script)}, tmp)
        fs.services.procs.append(sim)
        wait_http(f"{self.sim_url}/healthz", sim)
        api = self.start("api", "api", "--host", hosts["api"].addr, "--port", "8000")
        self.api_url = f"http://{hosts['api'].addr}:8000"
        wait_http(f"{self.api_url}/healthz", api, timeout_s=90)
        # Jobs dealt to several members: admission caps running jobs per user.
        self.users = [make_user(fs.factory) for _ in range(args.users)]

    def start(self, host: str, *args: str) -> Proc:
        home = self.tmp / f"home-{host}"
        home.mkdir(exist_ok=True)
        env = {**self.env, "LEAFLAB_HOME": str(home), "LEAFLAB_WORKER_ID": host}
        proc = Proc(host, [*self.hosts[host].prefix(), LEAFLAB, "serve", *args], env, self.tmp)
        self.fs.services.procs.append(proc)
        return proc

    def start_worker(self, host: str) -> None:
        proc = self.start(host, "worker", "-c", str(self.args.concurrency))
        deadline = time.monotonic() + 90
        while " ready." not in proc.log():
            if proc.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(proc.log()[-3000:])
            time.sleep(0.2)

    def run_batch(self, label: str) -> tuple[float, list[str]]:
        """Submit the batch through the API host; seconds until the last job finished."""

        def submit(i: int) -> str:
            user: TestUser = self.users[i % len(self.users)]
            with httpx.Client(base_url=self.api_url, timeout=30) as client:
                client.headers["Authorization"] = f"Bearer {user.key}"
                body = {"kind": "turn", "input": {"content": f"{label} {i}"}}
                return str(client.post("/v1/jobs", json=body).json()["id"])

        def finish(i_job: tuple[int, str]) -> str:
            user = self.users[i_job[0] % len(self.users)]
            with httpx.Client(base_url=self.api_url, timeout=30) as client:
                client.headers["Authorization"] = f"Bearer {user.key}"
                return str(wait_job(client, i_job[1], timeout_s=600)["status"])

        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(submit, range(self.args.jobs)))
            statuses = list(pool.map(finish, enumerate(ids)))
        took = time.monotonic() - started
        failed = [s for s in statuses if s != "succeeded"]
        if failed:
            raise RuntimeError(f"{len(failed)} jobs did not succeed: {Counter(failed)}")
        return took, ids

    def split(self, ids: list[str]) -> dict[str, int]:
        """Job slices per worker host, from the job spans (exported in batches: wait)."""
        deadline = time.monotonic() + 30
        counts: Counter[str] = Counter()
        while time.monotonic() < deadline:
            with self.fs.factory() as db:
                rows = db.execute(
                    text(
                        "SELECT s.attributes->>'leaflab.worker.id' FROM spans s "
                        "JOIN jobs j ON j.trace_id = s.trace_id "
                        "WHERE s.name = :n AND CAST(j.id AS text) = ANY(:ids)"
                    ),
                    {"n": SPAN_JOB, "ids": ids},
                )
                counts = Counter(str(r[0]) for r in rows)
            if sum(counts.values()) >= len(ids):
                break
            time.sleep(0.5)
        return dict(counts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=48)
    parser.add_argument("--calls", type=int, default=3, help="model calls per job")
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("-c", "--concurrency", type=int, default=8, help="threads per worker host")
    parser.add_argument("--users", type=int, default=12, help="members the jobs are dealt to")
    args = parser.parse_args(argv)
    monkeypatch = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory(prefix="leaflab-multihost-") as tmp_dir, lan(HOSTS) as hosts:
        tmp = Path(tmp_dir)
        fs = start_fault_stack(tmp, monkeypatch, hosts=("127.0.0.1", DATA_ADDR))
        try:
            bench = Bench(hosts, fs, tmp, args)
            bench.start_worker("worker-a")
            one, _ = bench.run_batch("one-host")
            bench.start_worker("worker-b")
            two, ids = bench.run_batch("two-hosts")
            split = bench.split(ids)
        finally:
            stop_fault_stack(fs)
            monkeypatch.undo()
    ideal_one = args.jobs * args.calls * args.latency_ms / 1000 / args.concurrency
    print(
        f"{args.jobs} jobs x {args.calls} model calls at {args.latency_ms} ms, "
        f"-c {args.concurrency} per worker host, {args.users} users"
    )
    for label, took, ideal in (
        ("1 worker host ", one, ideal_one),
        ("2 worker hosts", two, ideal_one / 2),
    ):
        print(f"{label}: {took:6.2f} s  {args.jobs / took:6.2f} jobs/s  (ideal {ideal:.2f} s)")
    print(f"2 hosts / 1 host jobs/s: {one / two:.2f}x; job slices per host (2 hosts): {split}")
    figures = {"one_host_s": one, "two_hosts_s": two, "speedup": one / two, "split": split}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
