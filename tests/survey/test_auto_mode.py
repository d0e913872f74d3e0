"""With the simulator in auto mode (no script) a survey completes and its citations resolve.

Nothing here scripts the simulator: every model reply comes from its auto mode
(services/model_sim/auto), as it would for `leaflab up --model-sim` with no script.
"""

from __future__ import annotations

import json

from tests.model_sim.prompt_text import ALL_PROMPTS, sentences
from tests.survey.conftest import SurveyStack
from tests.survey.survey_run import bib_keys, cited_keys, finish, submit


def test_a_survey_completes_with_no_script(survey_stack: SurveyStack) -> None:
    with survey_stack.client() as client:
        session_id = str(client.post("/v1/sessions", json={"title": "auto"}).json()["id"])
        job_id = submit(client, session_id)
        survey = finish(client, job_id, session_id)
    assert survey.job["status"] == "succeeded", survey.job
    cited = cited_keys(survey.files["report.md"])
    papers = json.loads(survey.files["papers.json"])
    assert cited == {p["key"] for p in papers}
    assert cited <= bib_keys(survey.files["references.bib"])
    library = {d["id"] for d in survey_stack.documents}
    assert all(p["document_id"] in library for p in papers)
    # Auto mode writes a cited paragraph from the notes of the keys it cites, and a
    # note from the passages it points at, so the model-independent checks keep
    # citations in the text; whatever they take out is listed, never dropped silently.
    report_md = survey.files["report.md"]
    checks = report_md.split("## Citation checks", 1)[1].split("\n## ", 1)[0]
    kept, flagged = checks.count('": cited, score'), checks.count('": needs checking, score')
    assert cited and kept >= 2 * flagged, report_md
    for note in json.loads(survey.files["notes.json"]):
        assert note["locators"] and note["locators"][0]["document_id"] in library
    # Sections are built from the papers' passages and notes, never from a stage's prompt.
    report = " ".join(survey.files["report.md"].split()).lower()
    assert [s for s in sentences(ALL_PROMPTS) if s.lower() in report] == []
