"""Weak output is a visible outcome: an empty final reply is flagged on the step and
the job, never a silent success with ""; a cut reply is flagged as truncated."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from services.worker.spine.answer import (
    EMPTY_REPLY_NOTICE,
    TRUNCATED_NOTICE,
    answer_result,
)
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services


def test_an_empty_final_reply_is_flagged_on_the_step_and_the_job(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.simulator({"replies": [{"content": ""}]})
    client = client_for(services.api(), make_user(session_factory))
    services.worker()
    session_id = client.post("/v1/sessions", json={}).json()["id"]
    job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "hi"}).json()[
        "job_id"
    ]
    job = wait_job(client, job_id, timeout_s=60)
    assert job["status"] == "succeeded"
    assert job["result"]["empty"] is True and job["result"]["notice"] == EMPTY_REPLY_NOTICE
    (step,) = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    result = step["result"]
    assert result["empty"] is True and result["truncated"] is False
    assert result["finish_reason"] == "stop" and result["usage"]["estimated"] is False


def test_the_final_answer_says_when_it_was_cut_or_empty() -> None:
    assert answer_result("ok", False, False) == {"content": "ok"}
    assert answer_result("half a sent", True, False) == {
        "content": "half a sent",
        "truncated": True,
        "notice": TRUNCATED_NOTICE,
    }
    assert answer_result(None, True, True)["notice"] == EMPTY_REPLY_NOTICE
