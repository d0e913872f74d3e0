"""The ``agent`` tool: a child job whose answer is the parent's tool result.

Real processes: model simulator, API, agent worker(s). The parent's session
has a script that calls ``agent``; the child (its own, new session) plays the
simulator's default script.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Job
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.sweeps import wait_through_sweeps

CHILD_ANSWER = "the child found 42"


def _parent_script(task: str = "find the answer", tools: list[str] | None = None) -> dict:
    args: dict[str, Any] = {"task": task}
    if tools is not None:
        args["tools"] = tools
    return {
        "latency_ms": 50,
        "replies": [
            {"tool_calls": [{"name": "agent", "arguments": args}]},
            {"content": "parent done"},
        ],
    }


def _children(factory: sessionmaker[Session], parent_id: str) -> list[Job]:
    with factory() as db:
        return list(db.scalars(select(Job).where(Job.parent_job_id == uuid.UUID(parent_id))))


def _start_turn(client: httpx.Client, sim: Any, script: dict) -> tuple[str, str]:
    session = client.post("/v1/sessions", json={}).json()
    sim.set_script(session["id"], script)
    job_id = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "delegate it"}
    ).json()["job_id"]
    return session["id"], job_id


def _wait_child_running(factory: sessionmaker[Session], parent_id: str) -> Job:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = _children(factory, parent_id)
        if kids and kids[0].status == "running":
            return kids[0]
        time.sleep(0.1)
    raise AssertionError("the subagent never started running")


def _child_span_and_agent_tool_spans(
    client: httpx.Client, trace_id: str, child_id: str
) -> tuple[dict[str, Any], set[str]]:
    deadline = time.monotonic() + 20
    while True:
        spans = client.get(f"/v1/traces/{trace_id}").json()["spans"]
        jobs = [
            s
            for s in spans
            if s["name"] == "job" and s["attributes"].get("leaflab.job.id") == child_id
        ]
        tools = {s["span_id"] for s in spans if s["name"] == "execute_tool agent"}
        if jobs and tools:
            first = min(jobs, key=lambda s: str(s["start"]))
            assert all(s["status"] != "ERROR" for s in spans if s["name"] == "execute_tool agent")
            return first, tools
        assert time.monotonic() < deadline, f"child spans never recorded: {spans}"
        time.sleep(0.5)


class TestSubagentRoundTrip:
    def test_child_answer_becomes_the_tool_result_and_the_child_is_in_the_tree(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        sim = services.simulator({"latency_ms": 1500, "replies": [{"content": CHILD_ANSWER}]})
        url = services.api()
        services.worker()
        client = client_for(url, make_user(session_factory))
        session_id, job_id = _start_turn(client, sim, _parent_script(tools=["read_file", "glob"]))

        # While the child thinks, the parent waits without a lease (no worker thread).
        child = _wait_child_running(session_factory, job_id)
        with session_factory() as db:
            parent = db.get(Job, uuid.UUID(job_id))
            assert parent is not None
            assert parent.status == "running" and parent.lease_owner is None

        job = wait_job(client, job_id, timeout_s=60)
        assert job["status"] == "succeeded", job
        assert job["result"]["content"] == "parent done"
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (agent_step,) = [s for s in steps if s["name"] == "agent"]
        assert agent_step["status"] == "succeeded"
        assert agent_step["result"]["content"] == CHILD_ANSWER
        assert agent_step["result"]["data"]["job_id"] == str(child.id)
        messages = client.get(f"/v1/sessions/{session_id}/messages").json()["items"]
        assert any(m["role"] == "tool" and m["content"] == CHILD_ANSWER for m in messages)

        # The job tree: the child names its parent, and the parent lists it.
        (listed,) = client.get("/v1/jobs", params={"parent": job_id}).json()["items"]
        assert listed["id"] == str(child.id)
        assert listed["parent_job_id"] == job_id and listed["status"] == "succeeded"
        assert listed["input"]["tools"] == ["glob", "read_file"]
        assert listed["input"]["content"] == "find the answer"
        assert listed["trace_id"] == job["trace_id"]
        # Its own context: the child's session holds only its task and its answer.
        child_messages = client.get(f"/v1/sessions/{listed['session_id']}/messages").json()
        assert [m["role"] for m in child_messages["items"]] == ["user", "assistant"]
        # The trace: the child's job span hangs under the parent's `agent` tool span.
        child_span, tool_span_ids = _child_span_and_agent_tool_spans(
            client, job["trace_id"], str(child.id)
        )
        assert child_span["parent_span_id"] in tool_span_ids
        # The child was offered only the tools it was given.
        stats = httpx.get(sim.url.removesuffix("/v1") + "/_sim/stats").json()
        assert sorted(stats["conversations"][listed["session_id"]]["last_tools"]) == [
            "glob",
            "read_file",
        ]

    def test_unknown_tool_for_the_child_is_a_tool_error_and_no_child(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        sim = services.simulator()
        url = services.api()
        services.worker()
        client = client_for(url, make_user(session_factory))
        _, job_id = _start_turn(client, sim, _parent_script(tools=["agent"]))
        job = wait_job(client, job_id, timeout_s=60)
        assert job["status"] == "succeeded", job
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (agent_step,) = [s for s in steps if s["name"] == "agent"]
        assert agent_step["status"] == "failed"
        assert "cannot use agent" in agent_step["error"]["message"]
        assert _children(session_factory, job_id) == []


class TestSharedWorkspace:
    def test_the_child_writes_the_parents_workspace_but_keeps_its_own_todos(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        child_script = {
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {"path": "notes.md", "content": "from child\n"},
                        }
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "name": "todo",
                            "arguments": {"items": [{"content": "check", "status": "completed"}]},
                        }
                    ]
                },
                {"content": CHILD_ANSWER},
            ]
        }
        sim = services.simulator(child_script)
        url = services.api()
        services.worker()
        client = client_for(url, make_user(session_factory))
        session_id, job_id = _start_turn(client, sim, _parent_script())
        assert wait_job(client, job_id, timeout_s=60)["status"] == "succeeded"

        (child,) = _children(session_factory, job_id)
        home = Path(os.environ["LEAFLAB_HOME"]) / "workspaces"
        assert (home / session_id / "notes.md").read_text() == "from child\n"
        assert not (home / str(child.session_id) / "notes.md").exists()
        with session_factory() as db:
            parent_session = db.get(ChatSession, uuid.UUID(session_id))
            child_session = db.get(ChatSession, child.session_id)
            assert parent_session is not None and child_session is not None
            assert parent_session.todos == []
            assert child_session.todos == [{"content": "check", "status": "completed"}]


class TestParentWaitsIdle:
    def test_the_sweeper_leaves_a_parent_alone_while_its_child_runs(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        # The child takes 6 s; sweeps run every 0.5 s and re-send after 2 s.
        sim = services.simulator({"latency_ms": 6000, "replies": [{"content": CHILD_ANSWER}]})
        url = services.api()
        services.worker()
        client = client_for(url, make_user(session_factory))
        _, job_id = _start_turn(client, sim, _parent_script())
        _wait_child_running(session_factory, job_id)
        # Sweeps must really run while the parent waits, else attempts == 1 proves nothing.
        wait_through_sweeps(services.env["LEAFLAB_REDIS_URL"], at_least=3, min_s=4, timeout_s=30)
        with session_factory() as db:
            parent = db.get(Job, uuid.UUID(job_id))
            assert parent is not None
            assert parent.attempts == 1, "the parent was leased again while it waited"
        job = wait_job(client, job_id, timeout_s=60)
        assert job["status"] == "succeeded"
        assert job["attempts"] == 2  # the one wake-up by the child's finish


class TestSubagentCrash:
    def test_kill_9_while_the_child_runs_one_child_parent_completes(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        sim = services.simulator({"latency_ms": 2500, "replies": [{"content": CHILD_ANSWER}]})
        url = services.api()
        worker = services.worker("victim")
        client = client_for(url, make_user(session_factory))
        _, job_id = _start_turn(client, sim, _parent_script())

        _wait_child_running(session_factory, job_id)
        worker.kill9()
        services.worker("survivor")

        job = wait_job(client, job_id, timeout_s=90)
        assert job["status"] == "succeeded", job
        kids = _children(session_factory, job_id)
        assert len(kids) == 1, kids
        assert kids[0].status == "succeeded" and kids[0].attempts >= 2
        steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
        (agent_step,) = [s for s in steps if s["name"] == "agent"]
        assert agent_step["executions"] == 1
        assert agent_step["result"]["content"] == CHILD_ANSWER

    def test_kill_9_right_after_the_spawn_commit_loses_nothing(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        sim = services.simulator({"replies": [{"content": CHILD_ANSWER}]})
        url = services.api()
        services.env["LEAFLAB_FAILPOINTS"] = "subagent.after_spawn=kill"
        victim = services.worker("victim")
        client = client_for(url, make_user(session_factory))
        _, job_id = _start_turn(client, sim, _parent_script())
        victim.popen.wait(60)  # died between the commit and sending the child's message
        del services.env["LEAFLAB_FAILPOINTS"]
        services.worker("survivor")

        job = wait_job(client, job_id, timeout_s=90)
        assert job["status"] == "succeeded", job
        kids = _children(session_factory, job_id)
        assert len(kids) == 1 and kids[0].status == "succeeded"
