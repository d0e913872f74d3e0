"""Submitting a batch of chain jobs through the API and watching them from Postgres."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, JobStep
from tests.faults.chains import chain_script
from tests.fixtures.processes import Simulator


@dataclass(frozen=True)
class ChainJob:
    job_id: str
    session_id: str


def submit_chains(
    client: httpx.Client, sim: Simulator, *, jobs: int, edits: int, latency_ms: int
) -> list[ChainJob]:
    """One session per job, each with its own scripted chain."""
    submitted = []
    for _ in range(jobs):
        session = client.post("/v1/sessions", json={}).json()
        sim.set_script(session["id"], chain_script(edits=edits, latency_ms=latency_ms))
        resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "chain"})
        assert resp.status_code == 202, resp.text
        submitted.append(ChainJob(resp.json()["job_id"], session["id"]))
    return submitted


def finished_tool_steps(factory: sessionmaker[Session], jobs: list[ChainJob]) -> int:
    ids = [uuid.UUID(j.job_id) for j in jobs]
    with factory() as db:
        return int(
            db.scalar(
                select(func.count())
                .select_from(JobStep)
                .where(
                    JobStep.job_id.in_(ids), JobStep.kind == "tool", JobStep.status == "succeeded"
                )
            )
            or 0
        )


def wait_progress(
    factory: sessionmaker[Session], jobs: list[ChainJob], steps: int, timeout_s: float = 120
) -> None:
    """Until ``steps`` tool steps are done across the batch: the run is mid-way."""
    deadline = time.monotonic() + timeout_s
    while finished_tool_steps(factory, jobs) < steps:
        assert time.monotonic() < deadline, f"fewer than {steps} tool steps after {timeout_s}s"
        time.sleep(0.1)


def wait_all_terminal(
    factory: sessionmaker[Session], jobs: list[ChainJob], timeout_s: float
) -> dict[str, str]:
    """job id → status once every job is terminal; fails listing the stragglers."""
    ids = [uuid.UUID(j.job_id) for j in jobs]
    deadline = time.monotonic() + timeout_s
    while True:
        with factory() as db:
            rows = db.execute(select(Job.id, Job.status).where(Job.id.in_(ids))).all()
        statuses = {str(r.id): r.status for r in rows}
        open_jobs = {j: s for j, s in statuses.items() if s in ("queued", "running")}
        if not open_jobs:
            return statuses
        assert time.monotonic() < deadline, f"jobs not finished after {timeout_s}s: {open_jobs}"
        time.sleep(0.25)
