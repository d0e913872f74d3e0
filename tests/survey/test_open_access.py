"""Gather beyond the library, part two: the open-access PDFs of the OpenAlex papers a
survey takes are fetched into the project's library (once, across a worker killed
mid-gather), and ``venues`` narrows the OpenAlex search.

The recorded search for "open access" finds three works: one whose PDF the recorded
web serves, one whose PDF link answers 404, one with no PDF. The surveys run in
projects of their own, so the fetched document never joins the member's own library
that the other survey tests count on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import stage_key
from services.worker.survey.oa_fetch import fetch_key
from tests.fixtures.builders import make_project, wait_job
from tests.fixtures.processes import Proc
from tests.survey.conftest import SurveyStack
from tests.survey.survey_run import artifacts, step_keys
from tests.survey.test_resume import _ensure_worker, _workers

TOPIC = "open access mining of scientific text"
SERVED = "W4100000001"  # its PDF is /oa/test-uu.pdf
BROKEN = "W4100000002"  # its PDF link answers 404
CLOSED = "W4100000003"  # no open-access copy
SERVED_PDF, BROKEN_PDF = "/oa/test-uu.pdf", "/oa/missing.pdf"


def _submit(client: httpx.Client, project: str, **extra: Any) -> str:
    session_id = str(client.post("/v1/sessions", json={"project": project}).json()["id"])
    body = {"topic": TOPIC, "length": "short", **extra}
    resp = client.post(
        "/v1/jobs",
        json={
            "kind": "survey",
            "session_id": session_id,
            "project": project,
            "input": body,
        },
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def _gathered(factory: sessionmaker[Session], job_id: str) -> dict[str, dict[str, Any]]:
    papers: dict[str, dict[str, Any]] = step_keys(factory, job_id)[stage_key("gather")].result[
        "papers"
    ]
    return {p["openalex_id"]: p for p in papers.values() if p["openalex_id"]}


def _wait_for_step(factory: sessionmaker[Session], job_id: str, key: str) -> None:
    _wait_until(lambda: key in step_keys(factory, job_id))


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < deadline, "waited two minutes in vain"
        time.sleep(0.2)


def _sole_worker(stack: SurveyStack, name: str, env: dict[str, str]) -> Proc:
    """The running workers stopped, and one started with ``env`` added to its own."""
    for proc in _workers(stack):
        proc.stop()
    svc = stack.services
    saved = dict(svc.env)
    svc.env.update(env)
    try:
        return svc.worker(name)
    finally:
        svc.env.clear()
        svc.env.update(saved)


def _wait_ready(client: httpx.Client, document_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while True:
        doc: dict[str, Any] = client.get(f"/v1/library/documents/{document_id}").json()
        if doc["status"] in ("ready", "failed") or time.monotonic() > deadline:
            return doc
        time.sleep(1)


def test_open_access_pdfs_join_the_project_library_once_across_a_kill(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    web = survey_stack.web
    hits_before = {p: web.hits[p] for p in (SERVED_PDF, BROKEN_PDF)}
    victim = _sole_worker(survey_stack, "worker-gather-victim", {})
    # The second fetch hangs, so the worker dies after the first one is recorded.
    web.stall(BROKEN_PDF, 30)
    project = make_project(session_factory, survey_stack.member)
    with survey_stack.client() as client:
        try:
            job_id = _submit(client, project)
            _wait_for_step(session_factory, job_id, fetch_key(SERVED))
            _wait_until(lambda: web.hits[BROKEN_PDF] > hits_before[BROKEN_PDF])
            assert fetch_key(BROKEN) not in step_keys(session_factory, job_id)
            victim.kill9()
        finally:
            web.stall(BROKEN_PDF, 0)
            _ensure_worker(survey_stack)
        job = wait_job(client, job_id, timeout_s=300)
        assert job["status"] == "succeeded", job.get("error")
        files = artifacts(client, job_id)
        papers = _gathered(session_factory, job_id)
        document_id = papers[SERVED]["document_id"]
        assert document_id, papers[SERVED]
        doc = _wait_ready(client, document_id)
    # Fetched once, although gather ran again after the kill; the fetch that was in
    # flight when the worker died ran again, and its 404 is recorded, not retried.
    assert web.hits[SERVED_PDF] - hits_before[SERVED_PDF] == 1
    assert web.hits[BROKEN_PDF] - hits_before[BROKEN_PDF] == 2
    assert "error" in step_keys(session_factory, job_id)[fetch_key(BROKEN)].result
    # The fetched paper is a document of the project's library, read from the
    # library's own passages once ingested (gather waited for it): their locators
    # name the paper's section and page, not just the first pages' "p1".
    assert doc["collection"].startswith("project:") and doc["status"] == "ready", doc
    served = papers[SERVED]
    assert served["passages"] == "library", served.get("passages_note")
    assert all(" | " in c["locator"] and c["page"] for c in served["chunks"]), served["chunks"]
    assert "SCIBERT" in " ".join(c["text"] for c in served["chunks"]).upper()
    note = next(n for n in json.loads(files["notes.json"]) if n["key"] == served["key"])
    pages = {c["page"] for c in served["chunks"]}
    assert note["locators"] and {loc["document_id"] for loc in note["locators"]} == {document_id}
    assert {loc["page"] for loc in note["locators"]} <= pages
    # The other stays an OpenAlex record (cited by its OpenAlex id). (Whether the
    # closed one is taken depends on whether the rerun's library search already found
    # the fetched document: the library's papers come first.)
    assert papers[BROKEN]["document_id"] is None
    assert papers[BROKEN]["chunks"][0]["locator"] == f"openalex:{BROKEN}"
    gathered = step_keys(session_factory, job_id)[stage_key("gather")].result["papers"]
    assert [p["document_id"] for p in gathered.values()].count(document_id) == 1


def test_venues_narrow_the_openalex_search_and_unfinished_ingestion_reads_first_pages(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    # No wait for ingestion: the fetched paper is read from its first pages, and says so.
    impatient = _sole_worker(
        survey_stack, "worker-impatient", {"LEAFLAB_SURVEY_INGEST_WAIT_S": "0"}
    )
    project = make_project(session_factory, survey_stack.member)
    searches_before = len(survey_stack.web.requests)
    try:
        with survey_stack.client() as client:
            # One ISSN (filtered by OpenAlex) and one venue name (matched on the records).
            job_id = _submit(client, project, venues=["1234-5679", "closed research letters"])
            job = wait_job(client, job_id, timeout_s=300)
            files = artifacts(client, job_id)
    finally:
        impatient.stop()
        _ensure_worker(survey_stack)
    assert job["status"] == "succeeded", job.get("error")
    gathered = _gathered(session_factory, job_id)
    assert set(gathered) == {SERVED, CLOSED}
    served = gathered[SERVED]
    assert served["document_id"], served  # fetched into the new project's library
    assert served["passages"] == "first_pages", served
    assert served["chunks"][0]["locator"] == "p1" and "SCIBERT" in served["chunks"][0]["text"]
    assert "had not finished ingesting it within 0 s" in served["passages_note"]
    cited = [p for p in json.loads(files["papers.json"]) if p["key"] == served["key"]]
    if cited:
        assert "(read from its first pages:" in files["report.md"]
    filters = [
        q.get("filter", [""])[0]
        for path, q, _ in survey_stack.web.requests[searches_before:]
        if path == "/works"
    ]
    assert "primary_location.source.issn:1234-5679" in filters


def test_fetches_are_bounded_in_number_and_size(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    web = survey_stack.web
    hits_before = {p: web.hits[p] for p in (SERVED_PDF, BROKEN_PDF)}
    # One fetch per survey, of at most 1000 bytes (the served PDF is ~366 kB).
    bounds = {"LEAFLAB_SURVEY_MAX_FETCHES": "1", "LEAFLAB_SURVEY_FETCH_MAX_BYTES": "1000"}
    bounded = _sole_worker(survey_stack, "worker-bounded", bounds)
    project = make_project(session_factory, survey_stack.member)
    try:
        with survey_stack.client() as client:
            job_id = _submit(client, project)
            job = wait_job(client, job_id, timeout_s=300)
    finally:
        bounded.stop()
        _ensure_worker(survey_stack)
    assert job["status"] == "succeeded", job.get("error")
    steps = step_keys(session_factory, job_id)
    assert steps[fetch_key(SERVED)].result["error"] == "too_large"
    assert fetch_key(BROKEN) not in steps  # past the bound: never asked
    assert web.hits[BROKEN_PDF] == hits_before[BROKEN_PDF]
    papers = _gathered(session_factory, job_id)
    assert papers[SERVED]["document_id"] is None  # too large: stays an OpenAlex record
