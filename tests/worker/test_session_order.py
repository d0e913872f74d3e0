"""Turns of one session run in order; cancelling a queued one lets the next run.

In its own module: a worker that another module keeps running would (rightly)
sweep these queued jobs into its own simulator.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services


def test_cancel_queued_job_is_immediate_and_the_next_turn_still_runs(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    sim = services.simulator()
    url = services.api()  # no worker yet: both jobs stay queued
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], {"replies": [{"content": "second turn answered"}]})
    first = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "one"})
    second = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "two"})
    cancelled = client.post(f"/v1/jobs/{first.json()['job_id']}/cancel").json()
    assert cancelled["status"] == "cancelled" and cancelled["finished_at"]
    services.worker()
    job = wait_job(client, second.json()["job_id"])
    assert job["status"] == "succeeded"
    assert job["result"]["content"] == "second turn answered"
    # The cancelled turn's message stays in the history the second turn saw.
    history = client.get(f"/v1/sessions/{session['id']}/messages").json()["items"]
    assert [m["content"] for m in history] == ["one", "two", "second turn answered"]


def test_a_turn_whose_session_row_is_gone_fails_with_a_clear_error(
    services: Services, session_factory: sessionmaker[Session]
) -> None:
    services.simulator()
    url = services.api()  # no worker yet: the turn stays queued
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={}).json()
    job_id = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}).json()[
        "job_id"
    ]
    with session_factory() as db:  # what deleting the session row does to its jobs
        db.execute(text("UPDATE jobs SET session_id = NULL WHERE id = :id"), {"id": job_id})
        db.commit()
    services.worker()
    job = wait_job(client, job_id)
    assert job["status"] == "failed"
    assert job["error"] == "this turn's chat session was deleted before it ran"
    assert job["attempts"] == 1  # failed at once, not after the worker gave up retrying
