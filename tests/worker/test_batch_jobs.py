"""Batch jobs: children run concurrently up to ``max_concurrency``; the summary lists each.

Real processes; every child plays the simulator's default script, slow enough
that the children's run intervals show how many ran at once.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services

TASKS = 5
LIMIT = 2


def _max_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    edges = [(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals]
    running = peak = 0
    for _, delta in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start at a tie
        running += delta
        peak = max(peak, running)
    return peak


class TestBatchConcurrency:
    def test_children_run_up_to_the_limit_at_once_and_the_summary_lists_each(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        services.simulator({"latency_ms": 1200, "replies": [{"content": "task done"}]})
        url = services.api()
        services.worker(concurrency=8)
        client = client_for(url, make_user(session_factory))
        body = {
            "kind": "batch",
            "input": {
                "tasks": [{"content": f"task {i}"} for i in range(TASKS)],
                "max_concurrency": LIMIT,
            },
        }
        job_id = client.post("/v1/jobs", json=body).json()["id"]
        job = wait_job(client, job_id, timeout_s=120)
        assert job["status"] == "succeeded", job

        summary = job["result"]
        assert summary["total"] == TASKS and summary["succeeded"] == TASKS
        assert summary["failed"] == 0
        assert [t["index"] for t in summary["tasks"]] == list(range(TASKS))
        for task in summary["tasks"]:
            assert task["status"] == "succeeded" and task["result"]["content"] == "task done"
            assert task["job_id"] and task["error"] is None

        with session_factory() as db:
            children = list(db.scalars(select(Job).where(Job.parent_job_id == uuid.UUID(job_id))))
        assert sorted(str(c.id) for c in children) == sorted(t["job_id"] for t in summary["tasks"])
        intervals = []
        for c in children:
            assert c.started_at is not None and c.finished_at is not None
            intervals.append((c.started_at, c.finished_at))
        # Never more than the limit at once, and the limit was really used.
        assert _max_overlap(intervals) == LIMIT
