"""Structured output's one repair retry, when it does not help: a stage whose model
answers text that is not JSON twice fails the job, and the job's error names the
stage's schema and why. Only the outline stage is scripted (twice prose); the
simulator's auto mode answers the others, so the stages before it succeed.
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import conversation, stage_key
from tests.fixtures.builders import wait_job
from tests.survey.conftest import SurveyStack
from tests.survey.survey_run import step_keys, submit
from tests.survey.test_resume import _ensure_worker


def test_invalid_json_twice_fails_the_stage_with_a_clear_error(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    _ensure_worker(survey_stack)
    with survey_stack.client() as client:
        session_id = str(client.post("/v1/sessions", json={"title": "repair"}).json()["id"])
        outline = conversation(session_id, "outline")
        prose = [{"content": "Sections: one on models, one on data."}, {"content": "Sorry, no."}]
        survey_stack.sim.set_script(outline, {"replies": prose})
        job = wait_job(client, submit(client, session_id), timeout_s=240)
    assert job["status"] == "failed", job
    error = job["error"]
    assert "survey_outline" in error and "after one repair" in error, error
    assert "invalid JSON" in error, error
    # The repair was asked for (a second request on the stage's conversation, with the
    # first reply and the error in it), and nothing after the failed stage ran.
    asked = survey_stack.sim_requests(outline)
    assert len(asked) == 2, asked
    steps = step_keys(session_factory, job["id"])
    assert stage_key("read") in steps
    assert stage_key("outline") not in steps and stage_key("write") not in steps
