"""A real job (API, agent worker, model simulator) whose model calls
library_search: the passages reach the ledger and the library's spans land in
the job's own trace."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models.telemetry import SpanRecord
from tests.fixtures.processes import Services
from tests.library import hostile_pdfs
from tests.library.api_app import bearer, new_email, user_with_key
from tests.library.conftest import TOKEN, LibraryService, wait_terminal

SCRIPT = {
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "library_search",
                    "arguments": {"query": "quasi-convex flow converges", "mode": "mix"},
                }
            ]
        },
        {"content": "Theorem 1 says the flow converges."},
    ]
}


def test_library_search_by_a_job_is_in_the_jobs_trace(
    library: LibraryService,
    services: Services,
    session_factory: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    with session_factory() as db, db.begin():
        user, key = user_with_key(db, new_email("trace"))
        user_id = user.id
    with httpx.Client(timeout=60) as raw:
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "flows.pdf")
        resp = raw.post(
            f"{library.url}/documents",
            headers=library.headers(user_id),
            files={"file": ("flows.pdf", pdf.read_bytes(), "application/pdf")},
        )
        doc_id = resp.json()["id"]
        assert wait_terminal(raw, library, library.headers(user_id), doc_id)["status"] == "ready"

    services.env.update({"LEAFLAB_LIBRARY_URL": library.url, "LEAFLAB_INTERNAL_TOKEN": TOKEN})
    services.simulator(SCRIPT)
    api = services.api()
    services.worker()
    with httpx.Client(base_url=api, headers=bearer(key), timeout=30) as client:
        resp = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "flows?"}})
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        deadline = time.monotonic() + 240
        job = client.get(f"/v1/jobs/{job_id}").json()
        while job["status"] not in ("succeeded", "failed", "cancelled"):
            assert time.monotonic() < deadline, job
            time.sleep(0.5)
            job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["status"] == "succeeded", job
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    (tool_step,) = [s for s in steps if s["name"] == "library_search"]
    assert doc_id in str(tool_step["result"])
    assert "Every quasi-convex flow with bounded curvature converges" in str(tool_step["result"])

    deadline = time.monotonic() + 30  # spans are exported in batches
    while True:
        with session_factory() as db:
            rows = db.execute(
                select(SpanRecord.name, SpanRecord.service).where(
                    SpanRecord.trace_id == job["trace_id"]
                )
            ).all()
        library_spans = {name for name, service in rows if service == "leaflab-library"}
        if {"GET /search", "library.search"} <= library_spans or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {"GET /search", "library.search"} <= library_spans, rows
