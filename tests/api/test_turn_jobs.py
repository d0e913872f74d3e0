"""A turn job end to end: API → Celery → worker → model simulator → tools → answer."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from services.common.models import JobStep
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack

NOTES_SCRIPT = {
    "latency_ms": 10,
    "replies": [
        {
            "tool_calls": [
                {
                    "name": "todo",
                    "arguments": {
                        "items": [
                            {"content": "write the notes", "status": "in_progress"},
                            {"content": "check them", "status": "pending"},
                        ]
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "notes/result.md", "content": "k_p = 2.5\n"},
                }
            ]
        },
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes/result.md"}}]},
        {"content": "The notes say k_p = 2.5."},
    ],
}


def _events(client: httpx.Client, job_id: str, last_id: str | None = None) -> list[dict]:
    headers = {"Last-Event-ID": last_id} if last_id else {}
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers, timeout=30) as resp:
        assert resp.status_code == 200
        return list(parse_sse(resp.iter_lines()))


def scripted_session(
    running: RunningStack, client: httpx.Client, script: dict, **body: object
) -> str:
    session = client.post("/v1/sessions", json=body).json()
    running.sim.set_script(session["id"], script)
    return str(session["id"])


def submit(client: httpx.Client, session_id: str, **body: object) -> str:
    resp = client.post("/v1/jobs", json={"session_id": session_id, **body})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


class TestTurnJob:
    def test_scripted_turn_succeeds_with_everything_persisted_and_streamed(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session = {"id": scripted_session(running, client, NOTES_SCRIPT, title="pid notes")}
        posted = client.post(
            f"/v1/sessions/{session['id']}/messages",
            json={"content": "Write k_p to notes and read it back"},
        )
        assert posted.status_code == 202
        job = wait_job(client, posted.json()["job_id"])

        assert job["status"] == "succeeded", job
        assert job["result"]["content"] == "The notes say k_p = 2.5."
        assert job["usage"]["input_tokens"] > 0 and job["cost_usd"] > 0

        messages = client.get(f"/v1/sessions/{session['id']}/messages").json()["items"]
        roles = [m["role"] for m in messages]
        assert roles == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
        ]
        assert "k_p = 2.5" in messages[6]["content"]  # read_file's result

        steps = client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]
        assert [(s["kind"], s["name"]) for s in steps if s["kind"] == "tool"] == [
            ("tool", "todo"),
            ("tool", "write_file"),
            ("tool", "read_file"),
        ]
        assert all(s["status"] == "succeeded" and s["executions"] == 1 for s in steps)

        workspace = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session["id"]
        assert (workspace / "notes" / "result.md").read_text() == "k_p = 2.5\n"
        refreshed = client.get(f"/v1/sessions/{session['id']}").json()
        assert [t["status"] for t in refreshed["todos"]] == ["in_progress", "pending"]

        events = _events(client, job["id"])
        kinds = [e["event"] for e in events]
        for expected in ("status", "tool_start", "todo", "tool_end", "token", "final"):
            assert expected in kinds, kinds
        assert events[-1]["event"] == "final"
        assert events[-1]["data"]["status"] == "succeeded"
        streamed = "".join(e["data"]["text"] for e in events if e["event"] == "token")
        assert "k_p = 2.5" in streamed

        # Resume: only events after the given id come back.
        resumed = _events(client, job["id"], last_id=events[2]["id"])
        assert [e["id"] for e in resumed] == [e["id"] for e in events[3:]]

    def test_second_turn_sees_first_turn_history(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        script = {"replies": [{"content": "first answer"}, {"content": "second answer"}]}
        session = {"id": scripted_session(running, client, script)}
        first = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "one"})
        second = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "two"})
        one = wait_job(client, first.json()["job_id"])
        two = wait_job(client, second.json()["job_id"])
        # The simulator picks the reply by how many assistant turns it was shown,
        # so "second answer" proves the second job saw the first job's history.
        assert (one["result"]["content"], two["result"]["content"]) == (
            "first answer",
            "second answer",
        )
        history = client.get(f"/v1/sessions/{session['id']}/messages").json()["items"]
        assert [m["content"] for m in history] == ["one", "first answer", "two", "second answer"]


class TestJobKinds:
    def test_batch_runs_tasks_and_summarises(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        # Batch tasks get fresh sessions: they hear the simulator's default reply.
        client = client_for(running.url, make_user(session_factory))
        resp = client.post(
            "/v1/jobs",
            json={
                "kind": "batch",
                "input": {
                    "tasks": [{"content": f"task {i}"} for i in range(5)],
                    "max_concurrency": 2,
                },
            },
        )
        assert resp.status_code == 202
        job = wait_job(client, resp.json()["id"], timeout_s=90)
        assert job["status"] == "succeeded", job
        summary = job["result"]
        assert (summary["total"], summary["succeeded"], summary["failed"]) == (5, 5, 0)
        assert all(t["status"] == "succeeded" and t["result"]["content"] for t in summary["tasks"])
        children = client.get("/v1/jobs", params={"limit": 50}).json()["items"]
        assert sum(1 for c in children if c["parent_job_id"] == job["id"]) == 5

    def test_max_turns_stops_a_looping_agent(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        loop = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}
        client = client_for(running.url, make_user(session_factory))
        sid = scripted_session(running, client, {"replies": [loop] * 10})
        job = wait_job(
            client, submit(client, sid, kind="turn", input={"content": "loop"}, max_turns=3)
        )
        assert job["status"] == "failed"
        assert "max_turns (3)" in job["error"]
        with session_factory() as db:
            llm_steps = db.scalars(
                select(JobStep).where(JobStep.job_id == job["id"], JobStep.kind == "llm")
            ).all()
        assert len(llm_steps) == 3

    def test_five_failed_tool_calls_stop_the_job(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        bad = {"tool_calls": [{"name": "read_file", "arguments": {"path": "../../etc/passwd"}}]}
        client = client_for(running.url, make_user(session_factory))
        sid = scripted_session(running, client, {"replies": [bad] * 8})
        job = wait_job(client, submit(client, sid, kind="turn", input={"content": "read it"}))
        assert job["status"] == "failed"
        assert "5 consecutive failed tool calls" in job["error"]
        steps = client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]
        failed = [s for s in steps if s["kind"] == "tool"]
        assert len(failed) == 5
        assert all(s["error"]["code"] == "path_outside_workspace" for s in failed)

    def test_invalid_tool_arguments_never_execute(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        sid = scripted_session(
            running,
            client,
            {
                "replies": [
                    {"tool_calls": [{"name": "write_file", "arguments": "{not json"}]},
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt"}}]},
                    {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
                    {"content": "gave up"},
                ]
            },
        )
        job = wait_job(client, submit(client, sid, kind="turn", input={"content": "try"}))
        assert job["status"] == "succeeded"
        steps = [
            s
            for s in client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]
            if s["kind"] == "tool"
        ]
        assert [s["error"]["code"] for s in steps] == [
            "invalid_arguments",
            "invalid_arguments",
            "unknown_tool",
        ]
        workspace = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / job["session_id"]
        assert not (workspace / "x.txt").exists()
        tool_messages = [
            m
            for m in client.get(f"/v1/sessions/{job['session_id']}/messages").json()["items"]
            if m["role"] == "tool"
        ]
        assert all(m["content"].startswith("ERROR [") for m in tool_messages)
        # What the job page shows: three failed calls with what the model sent.
        assert [(s["name"], s["status"]) for s in steps] == [
            ("write_file", "failed"),
            ("write_file", "failed"),
            ("no_such_tool", "failed"),
        ]
        assert steps[0]["arguments"] == {"raw": "{not json"}
        assert steps[1]["arguments"] == {"raw": '{"path": "x.txt"}'}
