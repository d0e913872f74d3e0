"""Helpers for approval scenarios: a turn whose script writes a protected file."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.models import Job
from tests.fixtures.builders import wait_job


def write_script(path: str, content: str, *, then: str = "done") -> dict[str, Any]:
    return {
        "latency_ms": 30,
        "replies": [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": path, "content": content}}
                ]
            },
            {"content": then},
        ],
    }


def start_turn(
    client: httpx.Client, sim: Any, script: dict[str, Any], **body: Any
) -> tuple[str, str]:
    session = client.post("/v1/sessions", json=body).json()
    sim.set_script(session["id"], script)
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "please edit"}
    ).json()["job_id"]
    return session["id"], job_id


def wait_waiting(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """The job once it waits for approval, and its one pending approval."""
    wait_job(client, job_id, timeout_s=60, statuses=("waiting_approval", "succeeded", "failed"))
    job = client.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "waiting_approval", job
    items = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    pending = [a for a in items if a["status"] == "pending"]
    assert len(pending) == 1, items
    return dict(pending[0])


def lease_owner(factory: sessionmaker[Session], job_id: str) -> str | None:
    with factory() as db:
        job = db.get(Job, uuid.UUID(job_id))
        assert job is not None
        return job.lease_owner


def workspace(home: str, session_id: str) -> Path:
    return Path(home) / "workspaces" / session_id


def events_of(redis_url: str, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    client = redis.Redis.from_url(redis_url)
    out = []
    for _, fields in client.xrange(job_stream(job_id)):
        out.append((fields[b"type"].decode(), json.loads(fields[b"data"])))
    return out


def tool_messages(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    items = client.get(f"/v1/sessions/{session_id}/messages").json()["items"]
    return [m for m in items if m["role"] == "tool"]


def wait_until(predicate: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)
