"""`leaflab batch FILE --watch` on real processes, and the batch's usage in the API.

Every task is a child turn that plays the simulator's default script slowly, one
at a time, so the watch sees tasks running and the API is read while some run.
The progress lines are words (never the event's dictionary) whose counts add
up to the total and agree with the last line; the batch parent's usage
(GET /v1/jobs/{id}) is the sum of its tasks' usage, during the run and after.
The CLI runs as its own process (tests/cli/cli_process.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.cli.cli_process import CliProcess
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Services

TASKS = 3
LIMIT = 1  # one at a time: a finished task has usage while the next still runs
PROGRESS = re.compile(r"^\[running\] (\d+) tasks: (\d+) succeeded((?:, \d+ [a-z]+)*)$")
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens")
TERMINAL = ("succeeded", "failed", "cancelled")


@pytest.fixture
def slow_lab(services: Services) -> Iterator[str]:
    # The only worker while this runs (why this is not in tests/cli, whose package-wide
    # `lab` worker's sweeper would take queued tasks to its fast simulator).
    services.simulator({"latency_ms": 2500, "replies": [{"content": "task done"}]})
    url = services.api()
    services.worker(concurrency=4)
    yield url


def _usage(job: dict[str, Any]) -> tuple[int, int, int, float]:
    u = job["usage"]
    return (*(int(u[k]) for k in USAGE_KEYS), round(float(job["cost_usd"]), 6))  # type: ignore[return-value]


def _sum(jobs: list[dict[str, Any]]) -> tuple[int, int, int, float]:
    rows = [_usage(j) for j in jobs]
    return (
        sum(r[0] for r in rows),
        sum(r[1] for r in rows),
        sum(r[2] for r in rows),
        round(sum(r[3] for r in rows), 6),
    )


def _tasks(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.get("/v1/jobs", params={"parent": job_id}).json()["items"]
    return items


def _job_id(client: httpx.Client) -> str:
    """The batch the CLI just submitted (the user's only one)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        batches = client.get("/v1/jobs", params={"kind": "batch"}).json()["items"]
        if batches:
            return str(batches[0]["id"])
        time.sleep(0.1)
    raise AssertionError("the batch was not submitted")


class TestBatchWatch:
    def test_progress_in_words_agrees_with_the_end_and_usage_is_the_tasks_sum(
        self, slow_lab: str, session_factory: sessionmaker[Session], tmp_path: Path
    ) -> None:
        user = make_user(session_factory)
        client = client_for(slow_lab, user)
        batch_file = tmp_path / "batch.json"
        tasks = [{"content": f"task {i}"} for i in range(TASKS)]
        batch_file.write_text(json.dumps({"tasks": tasks, "max_concurrency": LIMIT}))
        watcher = CliProcess(slow_lab, user.key, "batch", str(batch_file), "--watch")
        try:
            job_id = _job_id(client)
            seen_mid_run = self._usage_while_tasks_run(client, job_id)
            code, out = watcher.finish()
        finally:
            watcher.stop()
        assert code == 0, out
        assert seen_mid_run, "never read the batch while a task ran and another had usage"

        lines = out.splitlines()
        assert not any("{" in line or "}" in line for line in lines), out
        progress = [PROGRESS.match(line) for line in lines if line.startswith("[running] ")]
        assert progress and all(progress), out
        for match in progress:
            assert match is not None
            counts = [int(match.group(2))]
            counts += [int(part.split()[0]) for part in match.group(3).split(", ") if part]
            assert int(match.group(1)) == TASKS and sum(counts) == TASKS, match.group(0)
        assert any("running" in m.group(3) for m in progress if m), out

        job = client.get(f"/v1/jobs/{job_id}").json()
        summary = job["result"]
        assert job["status"] == "succeeded" and summary["succeeded"] == TASKS, job
        finals = [line for line in lines if line.startswith("[succeeded]")]
        assert finals == [f"[succeeded] {TASKS} tasks: {TASKS} succeeded"], out

        # After the run: the parent's usage is its tasks' sum, and that is what watch said.
        children = _tasks(client, job_id)
        assert len(children) == TASKS and all(c["status"] == "succeeded" for c in children)
        total = _sum(children)
        assert total[0] > 0 and total[1] > 0, children
        assert _usage(job) == total, (job, children)
        assert f"tokens {total[0]:,} in · {total[1]:,} out ({total[2]:,} cached)" in out, out

    @staticmethod
    def _usage_while_tasks_run(client: httpx.Client, job_id: str) -> bool:
        """Read the batch while tasks still run: its usage is their sum at every stable
        read (the tasks' figures alike before and after reading the parent)."""
        seen = False
        reads: list[tuple[str, bool, list[str], int]] = []  # what each read found, for a failure
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            before = _tasks(client, job_id)
            parent = client.get(f"/v1/jobs/{job_id}").json()
            after = _tasks(client, job_id)
            reads.append((parent["status"], _sum(before) == _sum(after),
                          [c["status"] for c in after], _sum(after)[0]))  # fmt: skip
            if parent["status"] in TERMINAL:
                assert seen, f"never read the batch mid-run with usage: {reads}"
                return seen
            stable = _sum(before) == _sum(after) and len(before) == len(after)
            if stable:
                assert _usage(parent) == _sum(after), (parent, after)
                running = any(c["status"] not in TERMINAL for c in after)
                seen = seen or (running and _sum(after)[0] > 0)
            time.sleep(0.05)
        raise AssertionError(f"batch {job_id} did not finish")
