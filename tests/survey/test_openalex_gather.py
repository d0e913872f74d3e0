"""Gather beyond the library: seed DOIs validated against OpenAlex, and an OpenAlex
search when the library holds fewer papers than the survey wants (recorded answers).

Only the plan is scripted; the simulator's auto mode answers the later stages, so the
survey completes and its gather step is what this test reads.
"""

from __future__ import annotations

import json

from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import conversation, stage_key
from tests.fixtures.builders import wait_job
from tests.survey.conftest import SurveyStack
from tests.survey.survey_run import step_keys

ATTENTION = "W2963403868"  # the seed, also the search's first hit
NOT_ALL_YOU_NEED = "W3100000001"  # the search's second hit


def test_seeds_and_an_openalex_search_fill_a_thin_library(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    with survey_stack.client() as client:
        session_id = str(client.post("/v1/sessions", json={}).json()["id"])
        plan = {"research_questions": ["What does attention do?"], "search_queries": ["attention"]}
        survey_stack.sim.set_script(
            conversation(session_id, "plan"), {"replies": [{"content": json.dumps(plan)}]}
        )
        survey_input = {
            "topic": "attention in scientific language models",
            "length": "short",
            "seed_papers": ["https://doi.org/10.48550/arXiv.1706.03762", "10.9999/missing"],
        }
        resp = client.post(
            "/v1/jobs", json={"kind": "survey", "session_id": session_id, "input": survey_input}
        )
        job = wait_job(client, resp.json()["id"], timeout_s=120)
    assert job["status"] == "succeeded", job.get("error")
    gathered = step_keys(session_factory, job["id"])[stage_key("gather")].result
    papers = list(gathered["papers"].values())
    from_openalex = {p["openalex_id"]: p for p in papers if p["openalex_id"]}
    assert set(from_openalex) == {ATTENTION, NOT_ALL_YOU_NEED}  # the seed once, not twice
    seed = from_openalex[ATTENTION]
    assert seed["year"] == 2017 and seed["authors"] and seed["document_id"] is None
    assert seed["chunks"][0]["locator"] == f"openalex:{ATTENTION}"
    in_library = {p["document_id"] for p in papers if p["document_id"]}
    assert in_library == {d["id"] for d in survey_stack.documents}
    assert gathered["unresolved_seeds"] == ["10.9999/missing"]
    searched = [q for path, q, _ in survey_stack.web.requests if path == "/works"]
    assert searched and "attention" in searched[-1]["search"][0]
