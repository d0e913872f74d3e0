"""What waiting costs: an approval's decision → job done, and a subagent round trip.

Real processes (model simulator at 0 ms latency, API, one agent worker) on a
scratch database. Each figure comes with a baseline measured in the same run:

- approval resume: from the ``apply`` decision's HTTP answer to the job's
  ``succeeded`` (the wake message, a slice that re-checks the baseline, applies
  the write and asks the model once more); baseline: a fresh one-reply turn from
  submission to ``succeeded`` (one Celery hop and one model call).
- subagent: a turn that calls ``agent`` (the child answers at once), submit →
  ``succeeded``; baseline: the same turn shape with a ``glob`` call instead.

    .venv/bin/python -m bench.approvals_subagents [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.harness import percentile
from bench.scratch_stack import scratch_stack
from services.common.db import build_engine, build_sessionmaker
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Services, Simulator

POLL_S = 0.01


def _wait(client: httpx.Client, job_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in statuses:
            return job
        time.sleep(POLL_S)
    raise RuntimeError(f"job {job_id} stuck")


def _turn(client: httpx.Client, sim: Simulator, script: dict[str, Any]) -> str:
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], script)
    job_id: str = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "go"}
    ).json()["job_id"]
    return job_id


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "replies": [{"tool_calls": [{"name": name, "arguments": arguments}]}, {"content": "ok"}]
    }


def _approval_resume(client: httpx.Client, sim: Simulator) -> float:
    job_id = _turn(client, sim, _call("write_file", {"path": "a.tex", "content": "x"}))
    _wait(client, job_id, ("waiting_approval",))
    (approval,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    client.post(f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"})
    start = time.perf_counter()
    assert _wait(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
    return time.perf_counter() - start


def _plain_turn(client: httpx.Client, sim: Simulator) -> float:
    start = time.perf_counter()
    job_id = _turn(client, sim, {"replies": [{"content": "ok"}]})
    assert _wait(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
    return time.perf_counter() - start


def _timed_turn(script: dict[str, Any]) -> Callable[[httpx.Client, Simulator], float]:
    def run(client: httpx.Client, sim: Simulator) -> float:
        start = time.perf_counter()
        job_id = _turn(client, sim, script)
        assert _wait(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
        return time.perf_counter() - start

    return run


def _report(label: str, values: list[float]) -> None:
    print(
        f"{label}: p50 {percentile(values, 50) * 1000:.0f} ms, "
        f"p90 {percentile(values, 90) * 1000:.0f} ms (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("LEAFLAB_HOME", tempfile.mkdtemp(prefix="leaflab-bench-"))
    with scratch_stack("approvals") as scratch, tempfile.TemporaryDirectory() as logs:
        services = Services(Stack(scratch.database_url, scratch.redis_url), Path(logs))
        try:
            sim = services.simulator({"latency_ms": 0, "replies": [{"content": "child ok"}]})
            url = services.api()
            services.worker()
            factory = build_sessionmaker(build_engine(scratch.database_url, pool_size=2))
            client = client_for(url, make_user(factory))
            cases: list[tuple[str, Callable[[httpx.Client, Simulator], float]]] = [
                ("approval: apply decision -> job succeeded", _approval_resume),
                ("baseline: one-reply turn, submit -> succeeded", _plain_turn),
                (
                    "subagent: turn calling agent, submit -> succeeded",
                    _timed_turn(_call("agent", {"task": "say ok"})),
                ),
                (
                    "baseline: same turn calling glob instead",
                    _timed_turn(_call("glob", {"pattern": "*"})),
                ),
            ]
            _plain_turn(client, sim)  # warm-up: connections, imports, first slice
            for label, case in cases:
                _report(label, [case(client, sim) for _ in range(args.runs)])
        finally:
            services.stop()


if __name__ == "__main__":
    main()
