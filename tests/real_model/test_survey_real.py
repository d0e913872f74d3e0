"""A whole survey on the real server: every stage's structured reply comes from llama.cpp.

Nothing is scripted. The packaged Gemma 3 270M behaves as a base model (it never
ends a turn on its own), so before the schemas were bounded to fit the reply's
tokens (services/worker/survey/reply_fit.py) a stage could run to ``max_tokens``
in the middle of a string or array, and a survey failed in ``read`` as truncated
even after its repair. How often depends on the passages: this run also passes
without the bounds, so the bounds' own guarantee is measured with the server's
tokenizer in test_reply_fit_real.py.

Kept small (one paper, the short shape, 256-token replies: about a minute on an
idle 2-core machine, two under load) because each reply costs seconds of CPU
here. Judged on what a researcher gets: the job succeeds, the note of the paper in
their library points at its passages, the writer cites that paper (the schemas ask
a grammar-following server for at least one section, paragraph and key: without
that floor this model answered an empty outline and the report cited nothing),
whether the verifier kept the claim or moved it to "Needs checking" (that is this
small model's judgement, not protocol), the body cites exactly its bibliography,
and every call was the server's, billed by the usage it reported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.library_services import library_services
from tests.fixtures.library_uploads import ingest_ready
from tests.fixtures.real_model import RealModelServer
from tests.fixtures.recorded_web import serve_recorded_web
from tests.library.conftest import PDF_DIR
from tests.survey.survey_run import artifacts, bib_keys, cited_keys

PAPER = "1903.10676.pdf"  # SciBERT: the smallest of the shared PDFs
REPLY_TOKENS = 256


def _flagged_keys(report: str) -> set[str]:
    """The keys of claims the report moved to "Needs checking" (``— cited `k`: why``)."""
    if "## Needs checking" not in report:
        return set()
    part = report.split("## Needs checking", 1)[1].split("## References", 1)[0]
    return {
        key
        for cited in re.findall(r"— cited ([^:]*):", part)
        for key in re.findall(r"`([^`]+)`", cited)
    }


def _stage_steps(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    """The survey's ledger steps that made model calls."""
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    return [s for s in steps if s["kind"] == "survey" and s["arguments"].get("model_calls")]


@pytest.mark.timeout(1500)
def test_a_whole_survey_runs_on_the_real_server(
    real_model: RealModelServer,
    stack: Stack,
    tmp_path: Path,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> None:
    with (
        library_services(stack, tmp_path, isolated_redis_url) as (svc, _),
        serve_recorded_web() as web,
    ):
        svc.env.update(
            {
                "LEAFLAB_OPENALEX_BASE_URL": web.base,
                "LEAFLAB_WEB_ALLOW": web.allow_entry,
                "LEAFLAB_LLM_BASE_URL": real_model.base_url,
                "LEAFLAB_MODEL": real_model.model,
                "LEAFLAB_LLM_MAX_TOKENS": str(REPLY_TOKENS),
                "LEAFLAB_CONTEXT_LIMIT_TOKENS": str(real_model.n_ctx),
            }
        )
        url = svc.api()
        svc.worker(concurrency=1)
        with client_for(url, make_user(session_factory)) as client:
            doc_id = ingest_ready(client, PDF_DIR / PAPER)
            session_id = client.post("/v1/sessions", json={"title": "real survey"}).json()["id"]
            resp = client.post(
                "/v1/jobs",
                json={
                    "kind": "survey",
                    "session_id": session_id,
                    "input": {"topic": "pretrained language models for science", "length": "short"},
                },
            )
            assert resp.status_code == 202, resp.text
            job_id = str(resp.json()["id"])
            job = wait_job(client, job_id, timeout_s=1200)
            # The error first: a long job dict is cut by pytest before it would show.
            assert job["status"] == "succeeded", (job.get("error"), real_model.log()[-3000:], job)
            files = artifacts(client, job_id)
            stages = _stage_steps(client, job_id)

    # The read stage worked on the researcher's paper: its note points at its passages.
    notes = json.loads(files["notes.json"])
    read = {n["key"] for n in notes if any(loc["document_id"] == doc_id for loc in n["locators"])}
    assert read, notes
    # The writer cited it. Whether a claim survives is the verifier's (this small model's)
    # judgement: a kept claim cites it in the body, a dropped one under "Needs checking";
    # either way the citation names a paper that was read, never an invented key.
    report = files["report.md"]
    kept, flagged = cited_keys(report), _flagged_keys(report)
    assert (kept | flagged) & read, report[:2000]
    assert kept | flagged <= {n["key"] for n in notes}, (kept, flagged, notes)
    # What the body cites is exactly what its bibliography and papers.json hold.
    papers = {p["key"]: p for p in json.loads(files["papers.json"])}
    assert kept == set(papers) and kept <= bib_keys(files["references.bib"]), (kept, papers)
    # Every stage that asked the model asked this server; the job is billed by its usage.
    assert {s["name"] for s in stages} >= {"plan", "read", "outline", "write"}, stages
    for step in stages:
        assert set(step["arguments"]["models"]) == {real_model.model}, step
    usage = job["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, usage
    assert not usage["estimated"], usage
