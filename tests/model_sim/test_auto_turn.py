"""A turn job through the running stack with the simulator in auto mode: no script anywhere."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack


def _turn(client: httpx.Client, content: str) -> tuple[str, dict]:
    session = client.post("/v1/sessions", json={"title": "auto"}).json()
    posted = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": content})
    assert posted.status_code == 202, posted.text
    return str(session["id"]), wait_job(client, posted.json()["job_id"])


class TestUnscriptedTurns:
    def test_a_question_gets_an_answer_about_it(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        _, job = _turn(client, "What limits the sampling rate in event-triggered control?")
        assert job["status"] == "succeeded", job
        assert "event-triggered control" in job["result"]["content"]
        assert job["usage"]["input_tokens"] > 0

    def test_asking_for_a_tool_runs_it_then_ends_the_turn(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session_id, job = _turn(client, "Use write_file to save notes on robust control theory.")
        assert job["status"] == "succeeded", job
        steps = client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]
        tools = [s for s in steps if s["kind"] == "tool"]
        assert [(s["name"], s["status"]) for s in tools] == [("write_file", "succeeded")]
        assert "write_file result" in job["result"]["content"]
        notes = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session_id / "notes"
        written = list(notes.glob("*.md"))
        assert len(written) == 1 and written[0].read_text().strip()
