"""Approvals survive crashes and restarts, and the mode is per project.

- kill -9 of the worker during the wait: the job stays ``waiting_approval``
  (no sweeper picks it up), and a decision later completes it with the edit
  applied exactly once.
- a project in ``strict`` mode gates every bash/python call.
- cancelling a job that waits for approval ends it.
"""

from __future__ import annotations

import os

import httpx
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Project
from tests.fixtures.builders import client_for, make_project, make_user, wait_job
from tests.fixtures.processes import RunningStack, Services
from tests.fixtures.sweeps import wait_through_sweeps
from tests.worker.approvals.conftest import (
    lease_owner,
    start_turn,
    tool_messages,
    wait_waiting,
    workspace,
)

EDIT = {
    "latency_ms": 30,
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "main.py", "old_string": "n = 1", "new_string": "n = 2"},
                }
            ]
        },
        {"content": "bumped"},
    ],
}


class TestKillDuringWait:
    def test_waiting_job_survives_kill_9_and_a_later_decision_applies_once(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        sim = services.simulator()
        url = services.api()
        worker = services.worker("victim")
        client = client_for(url, make_user(session_factory))
        session = client.post("/v1/sessions", json={}).json()
        ws = workspace(os.environ["LEAFLAB_HOME"], session["id"])
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "main.py").write_text("n = 1\n")
        sim.set_script(session["id"], EDIT)
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "bump n"}
        ).json()["job_id"]
        approval = wait_waiting(client, job_id)

        worker.kill9()
        worker = services.worker("second")
        # Several sweep periods (0.5 s; requeue after 2 s) pass: nobody takes it. The
        # sweeps must really run meanwhile, else the silence below proves nothing.
        wait_through_sweeps(services.env["LEAFLAB_REDIS_URL"], at_least=4, min_s=5, timeout_s=30)
        job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["status"] == "waiting_approval", job
        assert lease_owner(session_factory, job_id) is None
        assert (ws / "main.py").read_text() == "n = 1\n"

        # And a restart of everything else: the API too.
        worker.kill9()
        url = services.api()
        services.worker("third")
        client.base_url = httpx.URL(url)
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
        )
        assert resp.status_code == 200, resp.text
        job = wait_job(client, job_id, timeout_s=60)
        assert job["status"] == "succeeded", job
        assert (ws / "main.py").read_text() == "n = 2\n"
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (edit,) = [s for s in steps if s["name"] == "edit_file"]
        assert edit["status"] == "succeeded" and edit["executions"] == 1
        (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
        assert after["status"] == "applied"


class TestStrictProject:
    def test_bash_waits_in_a_strict_project_and_a_rejection_never_runs_it(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        project = make_project(session_factory, user)
        with session_factory() as db, db.begin():
            db.execute(
                update(Project).where(Project.name == project).values(approval_mode="strict")
            )
        client = client_for(running.url, user)
        script = {
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "make clean"}}]},
                {"content": "skipped"},
            ]
        }
        session_id, job_id = start_turn(client, running.sim, script, project=project)
        approval = wait_waiting(client, job_id)
        assert approval["kind"] == "command"
        assert approval["diffs"] == [{"tool": "bash", "command": "make clean"}]
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}",
            json={"decision": "reject", "feedback": "not now"},
        )
        assert resp.status_code == 200
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded"
        (msg,) = tool_messages(client, session_id)
        assert "rejected" in msg["content"] and "not now" in msg["content"]

    def test_an_off_project_writes_protected_files_at_once(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        project = make_project(session_factory, user)
        with session_factory() as db, db.begin():
            db.execute(update(Project).where(Project.name == project).values(approval_mode="off"))
        client = client_for(running.url, user)
        script = {
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "a.py", "content": "1\n"}}
                    ]
                },
                {"content": "written"},
            ]
        }
        session_id, job_id = start_turn(client, running.sim, script, project=project)
        assert wait_job(client, job_id)["status"] == "succeeded"
        assert (workspace(os.environ["LEAFLAB_HOME"], session_id) / "a.py").read_text() == "1\n"


class TestCancelWhileWaiting:
    def test_cancel_ends_a_waiting_job_and_its_approval_can_no_longer_be_decided(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        script = {
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "x.tex", "content": "x"}}
                    ]
                },
                {"content": "never"},
            ]
        }
        _, job_id = start_turn(client, running.sim, script)
        approval = wait_waiting(client, job_id)
        assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 202
        job = wait_job(client, job_id)
        assert job["status"] == "cancelled"
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
        )
        assert resp.status_code == 409
        (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
        assert after["status"] == "cancelled"
