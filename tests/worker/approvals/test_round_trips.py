"""Approvals end to end: a protected write waits; apply, request changes, reject.

Real processes (simulator, API, agent worker) shared by the module; each test
has its own session and script. What is checked is what a user sees: the job
status, the approval rows, the workspace file, the tool message the model got.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack
from tests.worker.approvals.conftest import (
    events_of,
    lease_owner,
    start_turn,
    tool_messages,
    wait_waiting,
    workspace,
    write_script,
)

TEX = "\\section{Results}\nIt works.\n"


class TestApply:
    def test_apply_writes_the_file_once_after_the_human_says_so(
        self, running: RunningStack, session_factory: sessionmaker[Session], stack: Stack
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session_id, job_id = start_turn(client, running.sim, write_script("paper.tex", TEX))
        approval = wait_waiting(client, job_id)

        # Waiting: nothing written, no worker holds the job, the diff is shown.
        target = workspace(os.environ["LEAFLAB_HOME"], session_id) / "paper.tex"
        assert not target.exists()
        assert lease_owner(session_factory, job_id) is None
        assert approval["kind"] == "file_write" and approval["tool_name"] == "write_file"
        (diff,) = approval["diffs"]
        assert diff["path"] == "paper.tex" and "+\\section{Results}" in diff["diff"]
        assert approval["baselines"] == {"paper.tex": None}

        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
        )
        assert resp.status_code == 200, resp.text
        assert resp.json()["status"] == "approved"
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded", job
        assert target.read_text() == TEX
        (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
        assert after["status"] == "applied" and after["decided_at"] is not None
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (write,) = [s for s in steps if s["name"] == "write_file"]
        assert write["status"] == "succeeded" and write["executions"] == 1
        # The job's event stream told the watcher about the approval, both ways.
        statuses = [d["status"] for t, d in events_of(stack.redis_url, job_id) if t == "approval"]
        assert statuses[0] == "pending" and "approved" in statuses
        assert ("status", {"status": "waiting_approval"}) in events_of(stack.redis_url, job_id)

    def test_unprotected_paths_do_not_wait(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        _, job_id = start_turn(client, running.sim, write_script("notes.md", "plain notes\n"))
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded"
        assert client.get(f"/v1/jobs/{job_id}/approvals").json()["items"] == []

    @pytest.mark.parametrize("path", ["Paper.TEX", "scripts/RUN.SH", "refs.Bib"])
    def test_protected_suffixes_match_whatever_the_case(
        self, running: RunningStack, session_factory: sessionmaker[Session], path: str
    ) -> None:
        """``Paper.TEX`` is as protected as ``paper.tex``: a case-sensitive match
        would let a model write it unreviewed by changing the case."""
        client = client_for(running.url, make_user(session_factory))
        session_id, job_id = start_turn(client, running.sim, write_script(path, TEX))
        approval = wait_waiting(client, job_id)
        (diff,) = approval["diffs"]
        assert diff["path"] == path
        assert not (workspace(os.environ["LEAFLAB_HOME"], session_id) / path).exists()
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "reject"}
        )
        assert resp.status_code == 200, resp.text

    @pytest.mark.parametrize(
        "path", ["Makefile", ".github/workflows/x.yml", "conftest.py", "Paper.JL"]
    )
    def test_build_ci_hook_and_other_language_files_wait(
        self, running: RunningStack, session_factory: sessionmaker[Session], path: str
    ) -> None:
        """Build files, CI workflows, pytest hooks and Julia code run code later:
        a write to any of them waits like a ``.tex`` (the default protected globs)."""
        client = client_for(running.url, make_user(session_factory))
        session_id, job_id = start_turn(client, running.sim, write_script(path, "all:\n"))
        approval = wait_waiting(client, job_id)
        (diff,) = approval["diffs"]
        assert diff["path"] == path and "+all:" in diff["diff"]
        assert not (workspace(os.environ["LEAFLAB_HOME"], session_id) / path).exists()
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "reject"}
        )
        assert resp.status_code == 200, resp.text
        assert wait_job(client, job_id)["status"] == "succeeded"
        assert not (workspace(os.environ["LEAFLAB_HOME"], session_id) / path).exists()


class TestRequestChanges:
    def test_feedback_reaches_the_model_and_nothing_is_written(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session_id, job_id = start_turn(
            client, running.sim, write_script("refs.bib", "@article{x}\n", then="will fix")
        )
        approval = wait_waiting(client, job_id)
        feedback = "use the DOI-based key, not x"
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}",
            json={"decision": "request_changes", "feedback": feedback},
        )
        assert resp.status_code == 200, resp.text
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded" and job["result"]["content"] == "will fix"
        assert not (workspace(os.environ["LEAFLAB_HOME"], session_id) / "refs.bib").exists()
        # The model's next request carried the feedback as the tool result.
        (msg,) = tool_messages(client, session_id)
        assert feedback in msg["content"] and "changes" in msg["content"]
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (write,) = [s for s in steps if s["name"] == "write_file"]
        assert write["error"]["code"] == "changes_requested"
        (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
        assert after["status"] == "changes_requested" and after["feedback"] == feedback


class TestReject:
    def test_reject_leaves_the_file_alone_and_tells_the_model(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session_id, job_id = start_turn(
            client, running.sim, write_script("run.sh", "rm -rf data\n", then="ok, not doing it")
        )
        ws = workspace(os.environ["LEAFLAB_HOME"], session_id)
        approval = wait_waiting(client, job_id)
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "reject"}
        )
        assert resp.status_code == 200, resp.text
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded"
        assert not (ws / "run.sh").exists()
        (msg,) = tool_messages(client, session_id)
        assert "rejected" in msg["content"]
        # A decided approval cannot be decided again.
        again = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
        )
        assert again.status_code == 409


class TestBaseline:
    def test_a_file_changed_meanwhile_fails_the_approval_cleanly(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session = client.post("/v1/sessions", json={}).json()
        ws = workspace(os.environ["LEAFLAB_HOME"], session["id"])
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "model.py").write_text("x = 1\n")
        running.sim.set_script(
            session["id"],
            {
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "edit_file",
                                "arguments": {
                                    "path": "model.py",
                                    "old_string": "x = 1",
                                    "new_string": "x = 2",
                                },
                            }
                        ]
                    },
                    {"content": "noted"},
                ]
            },
        )
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "bump x"}
        ).json()["job_id"]
        approval = wait_waiting(client, job_id)
        assert approval["baselines"]["model.py"] is not None
        # Someone edits the file while the approval waits.
        (ws / "model.py").write_text("x = 1\ny = 5\n")
        resp = client.post(
            f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
        )
        assert resp.status_code == 200
        job = wait_job(client, job_id)
        assert job["status"] == "succeeded"
        assert (ws / "model.py").read_text() == "x = 1\ny = 5\n"  # untouched
        (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
        assert after["status"] == "failed" and "model.py changed" in after["error"]
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (edit,) = [s for s in steps if s["name"] == "edit_file"]
        assert edit["error"]["code"] == "approval_baseline_changed"
        (msg,) = tool_messages(client, session["id"])
        assert "changed after the approval was requested" in msg["content"]
