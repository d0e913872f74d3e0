"""A survey whose model goes away mid-stage waits (``waiting_model``) at the stage it
is in and resumes there when the endpoint answers again: the notes finished before
the outage are not asked for again, and the survey succeeds."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import conversation, item_key
from tests.survey.conftest import SurveyStack
from tests.survey.scripts import survey_scripts
from tests.survey.survey_run import events, finish, open_scripted_session, step_keys, submit

# The worker's router makes 1 + LEAFLAB_LLM_MAX_RETRIES (2) tries per call: all of
# them find the endpoint overloaded, so the call fails as an outage.
OUTAGE = [{"error": 503, "message": "model is loading"}] * 3


def test_a_survey_parked_mid_read_resumes_at_that_stage(
    survey_stack: SurveyStack, session_factory: sessionmaker[Session]
) -> None:
    with survey_stack.client() as client:
        session_id, keys = open_scripted_session(survey_stack, client)
        down = keys[1]
        note = survey_scripts(session_id, keys)[conversation(session_id, "read", down)]
        survey_stack.sim.set_script(
            conversation(session_id, "read", down),
            {**note, "replies": [*OUTAGE, *note["replies"]]},
        )
        job_id = submit(client, session_id)
        survey = finish(client, job_id, session_id)
        statuses = [e["data"] for e in events(client, job_id) if e.get("event") == "status"]
    assert survey.job["status"] == "succeeded", survey.job
    waiting = [s for s in statuses if s.get("status") == "waiting_model"]
    assert waiting and "model is loading" in waiting[0]["message"], statuses
    asked = {k: len(survey_stack.sim_requests(conversation(session_id, "read", k))) for k in keys}
    # The paper whose read met the outage was asked again once it was over; the
    # others, noted before the park or after it, exactly once.
    assert asked == {k: (len(OUTAGE) + 1 if k == down else 1) for k in keys}, asked
    done = step_keys(session_factory, job_id)
    assert all(item_key("read", k) in done for k in keys)
