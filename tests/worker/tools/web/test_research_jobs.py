"""The research tools through the real job path: API → agent worker (a real
process) → tools → recorded web on loopback, scripted by the model simulator.

What a user sees is asserted: the job's status and error, its steps, the
library row a pdf_fetch added, and — for the refused calls — a canary that
received nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Document, Project
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import Services, Simulator
from tests.fixtures.recorded_web import (
    BRAVE_KEY,
    Canary,
    RecordedWeb,
    listening_canary,
    serve_recorded_web,
)

SEARCH = "/res/v1/web/search"


@dataclass
class ResearchStack:
    sim: Simulator
    url: str
    web: RecordedWeb
    canary: Canary


@pytest.fixture(scope="module")
def research_stack(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, isolated_redis_url: str
) -> Iterator[ResearchStack]:
    # A Redis db of its own: no library service runs for this stack, so an added paper
    # stays queued; the library tests' session-wide service (shared db) would take the
    # task and fail it, the file being in this stack's folder.
    redis.Redis.from_url(isolated_redis_url).flushdb()
    with serve_recorded_web() as web, listening_canary() as canary:
        svc = Services(stack, tmp_path_factory.mktemp("research"))
        svc.env.update(
            {
                "LEAFLAB_REDIS_URL": isolated_redis_url,
                "LEAFLAB_WEB_ALLOW": web.allow_entry,
                "LEAFLAB_BRAVE_API_KEY": BRAVE_KEY,
                "LEAFLAB_BRAVE_BASE_URL": f"{web.base}/res/v1",
                "LEAFLAB_OPENALEX_BASE_URL": web.base,
                "LEAFLAB_TOOL_RETRY_BASE_S": "0.05",
            }
        )
        try:
            sim = svc.simulator()
            url = svc.api()
            svc.worker()
            yield ResearchStack(sim, url, web, canary)
        finally:
            svc.stop()


def run_job(
    rs: ResearchStack, client: httpx.Client, replies: list[dict[str, Any]], project: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body: dict[str, Any] = {"title": "research"}
    if project:
        body["project"] = project
    session = client.post("/v1/sessions", json=body).json()
    rs.sim.set_script(session["id"], {"replies": replies})
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "research this"}
    ).json()["job_id"]
    job = wait_job(client, job_id, timeout_s=120)
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    return job, [s for s in steps if s["kind"] == "tool"]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_a_research_job_searches_reads_adds_a_paper_and_checks_citations(
    research_stack: ResearchStack, session_factory: sessionmaker[Session]
) -> None:
    rs = research_stack
    user = make_user(session_factory)
    project = make_project(session_factory, user)
    client = client_for(rs.url, user)
    base = rs.web.base
    job, steps = run_job(
        rs,
        client,
        [
            {
                "tool_calls": [
                    call("web_search", query="retrieval augmented generation", count=3),
                    call("web_fetch", url=f"{base}/article.html"),
                    call("pdf_fetch", url=f"{base}/paper.pdf", add_to_library=True),
                ]
            },
            {
                "tool_calls": [
                    call("paper_search", query="attention is all you need", limit=2),
                    call("paper_validate", doi="https://doi.org/10.1016/S0140-6736(97)11096-0"),
                ]
            },
            {"content": "Found three sources; one citation is retracted."},
        ],
        project,
    )
    assert job["status"] == "succeeded", job
    by_name = {s["name"]: s for s in steps}
    assert all(s["status"] == "succeeded" for s in steps), steps
    assert len(by_name["web_search"]["result"]["data"]["results"]) == 3
    assert by_name["web_fetch"]["result"]["data"]["title"] == "Sparse Retrieval Revisited"
    pdf = by_name["pdf_fetch"]["result"]["data"]
    assert pdf["pages"] == 4
    assert by_name["paper_search"]["result"]["content"].startswith("[1] Attention Is All You Need")
    validation = by_name["paper_validate"]["result"]["data"]
    assert validation["is_retracted"] is True
    # The fetched paper is in the project's library, queued for ingestion.
    with session_factory() as db:
        project_id = db.scalars(select(Project.id).where(Project.name == project)).one()
        doc = db.get(Document, uuid.UUID(pdf["document_id"]))
    assert doc is not None and doc.collection == f"project:{project_id}"
    assert doc.owner_id == user.id and doc.status in ("queued", "parsing", "embedding", "ready")


def test_a_retryable_search_failure_is_retried_inside_one_step(
    research_stack: ResearchStack, session_factory: sessionmaker[Session]
) -> None:
    rs = research_stack
    client = client_for(rs.url, make_user(session_factory))
    before = rs.web.hits[SEARCH]
    rs.web.fail_next(SEARCH, [503, 429])
    job, steps = run_job(
        rs,
        client,
        [{"tool_calls": [call("web_search", query="rag")]}, {"content": "ok"}],
        None,
    )
    assert job["status"] == "succeeded", job
    assert [s["status"] for s in steps] == ["succeeded"]
    assert rs.web.hits[SEARCH] - before == 3  # two failures, then the answer


def test_five_failed_calls_stop_the_job_with_a_message_naming_them(
    research_stack: ResearchStack, session_factory: sessionmaker[Session]
) -> None:
    rs = research_stack
    client = client_for(rs.url, make_user(session_factory))
    port = rs.canary.port
    forms = [
        f"http://2130706433:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://localhost:{port}/",
        f"http://169.254.169.254:{port}/latest/meta-data/",
        f"http://{rs.web.allow_entry}@127.0.0.1:{port}/",
    ]
    job, steps = run_job(
        rs,
        client,
        [
            {"tool_calls": [call("web_fetch", url=u) for u in forms]},
            {"content": "never reached"},
        ],
        None,
    )
    assert job["status"] == "failed", job
    assert [s["status"] for s in steps] == ["failed"] * 5
    assert all(s["error"]["code"] in ("url_refused", "invalid_url") for s in steps), steps
    error = job["error"]
    assert error.startswith("stopped after 5 consecutive failed tool calls: web_fetch [")
    assert error.count("web_fetch [") == 5
    assert "2130706433" in error and "169.254.169.254" in error
    assert rs.canary.hits == []
