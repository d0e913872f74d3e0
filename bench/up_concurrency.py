"""The concurrency a user gets out of the box: `leaflab up` with its defaults.

One user submits 100 jobs of 3 model calls each at 300 ms simulated latency
(two todo-tool rounds, then an answer), as a batch of tasks would. The stack is
started exactly as `make up` starts it (`leaflab up --model-sim SCRIPT`: its
embedded stores, its worker and its settings), once with the defaults
(``LEAFLAB_MAX_RUNNING_JOBS_PER_USER=8``) and once with the cap off (``0``).

Reported, each next to the baselines of the same run:

- serial: every model call one after another (jobs × calls × latency);
- the cap's bound: with at most ``cap`` jobs of the user running, the batch can
  take no less than serial / cap;
- the makespan from the first submission until the last job finished, and the
  slot hand-off: the median gap between a job starting and the latest finish
  before it (a freed slot handed over at once shows ~0), and how many jobs ran
  at once on average (the cap, where slots never sit idle).

    .venv/bin/python -m bench.up_concurrency [--jobs 100 --calls 3 --latency-ms 300]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.stack_cpu import ROLES, leaflab_cpu_s, role_of, stack_ledger
from tests.cli.up_harness import kill_group, new_home, remove, start_up, stop
from tests.fixtures.processes import free_port

CORES = len(os.sched_getaffinity(0))
WORKER_ROLE = "agent workers"


def script(calls: int, latency_ms: int) -> dict[str, Any]:
    todo = {"name": "todo", "arguments": {"items": [{"content": "read", "status": "completed"}]}}
    rounds: list[dict[str, Any]] = [{"tool_calls": [todo]} for _ in range(calls - 1)]
    return {"latency_ms": latency_ms, "replies": [*rounds, {"content": "done"}]}


def _profile_role(root: int, out: str, role: str) -> list[subprocess.Popen[bytes]]:
    """py-spy (``--gil``: the samples where a thread holds the GIL, raw collapsed stacks)
    on every process of ``role`` under the stack, until :func:`_stop_profiles`."""
    py_spy = str(Path(sys.executable).parent / "py-spy")
    workers = [
        p.pid for p in psutil.Process(root).children(recursive=True) if role_of(p.cmdline()) == role
    ]
    procs = []
    for n, pid in enumerate(workers):
        argv = [py_spy, "record", "--pid", str(pid), "--rate", "250", "--gil",
                "--format", "raw", "-o", f"{out}.{n}" if n else out]  # fmt: skip
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs


def _stop_profiles(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
    for proc in procs:
        proc.wait(timeout=60)


def _wait(client: httpx.Client, job_id: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job.get("status") in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.25)
    raise RuntimeError(f"job {job_id} did not finish in {timeout_s} s")


def _wait_all(client: httpx.Client, ids: list[str], timeout_s: float) -> list[dict[str, Any]]:
    """Every job of ``ids`` once all are finished, watched as a user watches a batch:
    one listing of the user's jobs per poll (not one request per job per poll)."""
    wanted = set(ids)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listing = client.get("/v1/jobs", params={"limit": min(500, len(ids) + 50)}).json()
        seen = {j["id"]: j for j in listing["items"] if j["id"] in wanted}
        if len(seen) == len(wanted) and all(
            j["status"] in ("succeeded", "failed", "cancelled") for j in seen.values()
        ):
            return [seen[i] for i in ids]
        time.sleep(0.25)
    raise RuntimeError(f"the jobs did not finish in {timeout_s} s")


def _handoff_gaps(jobs: list[dict[str, Any]]) -> list[float]:
    """Per started job beyond the first ``cap``-worth: seconds from the latest finish
    before its start to its start (the slot's idle time)."""
    finishes = sorted(_ts(j["finished_at"]) for j in jobs if j.get("finished_at"))
    starts = sorted(_ts(j["started_at"]) for j in jobs if j.get("started_at"))
    gaps = []
    for start in starts:
        before = [f for f in finishes if f <= start]
        if before:
            gaps.append(start - before[-1])
    return gaps


def _mean_running(jobs: list[dict[str, Any]]) -> float:
    """Jobs running at once on average over the batch: the sum of the jobs' own
    run times over the span from the first start to the last finish."""
    spans = [(_ts(j["started_at"]), _ts(j["finished_at"])) for j in jobs]
    total = sum(end - begin for begin, end in spans)
    return total / (max(e for _, e in spans) - min(b for b, _ in spans))


def _ts(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def cap_of(cap: int | None) -> int:
    """The cap a run used (None: the default of 8; 0: off, bounded by the jobs)."""
    return 8 if cap is None else (cap or 10**9)


def run_once(
    args: argparse.Namespace, cap: int | None, workdir: Path, up_args: list[str] | None = None
) -> dict[str, Any]:
    home = new_home()
    sim_script = workdir / "script.json"
    sim_script.write_text(json.dumps(script(args.calls, args.latency_ms)))
    saved = os.environ.get("LEAFLAB_MAX_RUNNING_JOBS_PER_USER")
    if cap is not None:
        os.environ["LEAFLAB_MAX_RUNNING_JOBS_PER_USER"] = str(cap)
    try:
        model_args = ["--model-sim", str(sim_script), *(up_args or [])]
        stack = start_up(home, free_port(), model_args=model_args, timeout_s=900)
    finally:
        if saved is None:
            os.environ.pop("LEAFLAB_MAX_RUNNING_JOBS_PER_USER", None)
        else:
            os.environ["LEAFLAB_MAX_RUNNING_JOBS_PER_USER"] = saved
    try:
        headers = {"Authorization": f"Bearer {stack.key()}"}
        with httpx.Client(base_url=stack.url, headers=headers, timeout=60) as client:
            # A warm-up job: the worker's first slice pays imports and connections.
            first = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "w"}})
            _wait(client, str(first.json()["id"]), 300)
            ledger = stack_ledger(stack.proc.pid)
            profiles = (
                _profile_role(stack.proc.pid, args.profile, args.profile_role)
                if args.profile
                else []
            )
            ledger.start()
            started = time.monotonic()

            def submit(i: int) -> str:
                body = {"kind": "turn", "input": {"content": f"task {i}"}}
                return str(client.post("/v1/jobs", json=body).json()["id"])

            with ThreadPoolExecutor(8) as pool:
                ids = list(pool.map(submit, range(args.jobs)))
                if args.poll == "each":  # the method before 2026-12-06: 8 pollers, a GET per job
                    done = list(pool.map(lambda j: _wait(client, j, 1800), ids))
                else:
                    done = _wait_all(client, ids, 1800)
            took = time.monotonic() - started
            cpu = ledger.stop()
            _stop_profiles(profiles)
        failed = [j["status"] for j in done if j["status"] != "succeeded"]
        if failed:
            raise RuntimeError(f"{len(failed)} jobs did not succeed: {failed[:5]}")
        gaps = _handoff_gaps(done)
        if args.timeline:
            keep = ("id", "created_at", "started_at", "finished_at", "status")
            rows = [{k: j.get(k) for k in keep} for j in done]
            Path(args.timeline).write_text(json.dumps(rows, indent=1))
        stop(stack)
    except BaseException:
        kill_group(stack)
        raise
    finally:
        remove(home)
    return {
        "cap": cap,
        "up_args": up_args or [],
        "makespan_s": round(took, 2),
        "mean_running": round(_mean_running(done), 2),
        # The cap's bound with the jobs' own measured run times (a loaded machine
        # stretches each job past its 0.9 s of simulated latency): Σ run / cap.
        "run_time_bound_s": round(
            sum(_ts(j["finished_at"]) - _ts(j["started_at"]) for j in done) / cap_of(cap), 2
        ),
        # CPU per job, by role (the client's polling GETs included in the API's), and
        # the makespan this machine's cores allow for the stack's own CPU.
        "cpu_ms_per_job": {k: round(v * 1000 / args.jobs, 1) for k, v in cpu.items() if v},
        # Of that, the kernel's (syscalls, socket I/O, thread hand-offs): work py-spy's
        # GIL samples do not show.
        "kernel_ms_per_job": {
            k: round(v * 1000 / args.jobs, 1) for k, v in ledger.system_s.items() if cpu.get(k)
        },
        "cpu_bound_s": round(leaflab_cpu_s(cpu) / CORES, 2),
        "handoff_gap_p50_ms": round(statistics.median(gaps) * 1000, 1) if gaps else None,
        "handoff_gap_p90_ms": round(sorted(gaps)[int(len(gaps) * 0.9)] * 1000, 1) if gaps else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--cap", type=int, default=8, help="the default cap (for its bound)")
    parser.add_argument(
        "--poll",
        choices=("list", "each"),
        default="list",
        help="watch the batch with one job listing per poll (list), or 8 threads each "
        "polling one job's GET at a time (each: the method before 2026-12-06, whose "
        "~2 requests per job per second counted in the API's CPU)",
    )
    parser.add_argument("--skip-uncapped", action="store_true")
    parser.add_argument("--skip-capped", action="store_true")
    parser.add_argument(
        "--also-uncapped",
        action="append",
        default=[],
        metavar="ARGS",
        help="also run the cap-off case with these extra `leaflab up` arguments "
        "(e.g. '--workers 1', the shape before the defaults were derived)",
    )
    parser.add_argument("--timeline", help="write the capped run's jobs (times) to this file")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="py-spy --gil on the agent worker(s) during each batch, raw collapsed stacks "
        "to FILE (FILE.1 … for more workers; the last run's are kept)",
    )
    parser.add_argument(
        "--profile-role",
        default=WORKER_ROLE,
        choices=sorted({role for _, role in ROLES if "apart" not in role}),
        help="which processes --profile samples (default: the agent workers)",
    )
    args = parser.parse_args(argv)
    import tempfile

    serial = args.jobs * args.calls * args.latency_ms / 1000
    runs = []
    with tempfile.TemporaryDirectory(prefix="leaflab-upconc-") as tmp:
        if not args.skip_capped:
            runs.append(run_once(args, None, Path(tmp)))
        if not args.skip_uncapped:
            runs.append(run_once(args, 0, Path(tmp)))
        for extra in args.also_uncapped:
            runs.append(run_once(args, 0, Path(tmp), extra.split()))
    load = os.getloadavg()[0]
    print(f"{args.jobs} jobs x {args.calls} model calls at {args.latency_ms} ms, one user")
    print(f"serial {serial:.1f} s; the default cap of {args.cap} implies {serial / args.cap:.1f} s")
    for run in runs:
        label = "defaults (cap 8)" if run["cap"] is None else "cap off        "
        if run["up_args"]:
            label = f"cap off, {' '.join(run['up_args'])}"
        bound = serial / args.cap if run["cap"] is None else None
        vs_bound = (
            f", {run['makespan_s'] / bound:.2f}x the cap's bound "
            f"({run['makespan_s'] / run['run_time_bound_s']:.2f}x the bound from the jobs' "
            f"measured run times, {run['run_time_bound_s']} s)"
            if bound
            else ""
        )
        print(
            f"{label}: {run['makespan_s']:6.2f} s = {serial / run['makespan_s']:5.1f}x faster "
            f"than serial{vs_bound}; {run['mean_running']} jobs running on average; "
            f"slot hand-off p50 {run['handoff_gap_p50_ms']} ms, "
            f"p90 {run['handoff_gap_p90_ms']} ms"
        )
        per_job = run["cpu_ms_per_job"]
        print(
            f"    CPU per job {sum(v for k, v in per_job.items() if 'apart' not in k):.1f} ms "
            f"({', '.join(f'{k} {v}' for k, v in per_job.items())}); the stack's CPU alone "
            f"bounds the batch at {run['cpu_bound_s']} s on {CORES} cores "
            f"(makespan {run['makespan_s'] / max(run['cpu_bound_s'], 1e-9):.2f}x that)"
        )
        kernel = run["kernel_ms_per_job"]
        print(f"    of which in the kernel: {', '.join(f'{k} {v}' for k, v in kernel.items())}")
    print(json.dumps({"serial_s": serial, "load1": round(load, 1), "runs": runs}))


if __name__ == "__main__":
    main()
