"""MCP tools through the real job path: API → agent worker (a real process) → MCP
servers (real processes), the model played by the simulator.

What a user sees is asserted: the job's status, its tool steps (status, result,
error) and approvals; the worker survives hostile servers and a kill -9 mid-call
(a call not marked idempotent is reported interrupted, not run again).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import add_member, create_project
from services.common.models import Project, User
from tests.conftest import Stack
from tests.fixtures import builders
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Proc, Services, Simulator
from tests.worker.mcp.conftest import (
    GIT,
    HOSTILE,
    TIME,
    clear_stored_list,
    make_repo,
    serve_http_mcp,
)

PROJECT = f"mcp-lab-{uuid.uuid4().hex[:8]}"


@dataclass
class McpStack:
    services: Services
    sim: Simulator
    url: str
    worker: Proc
    repo: Path
    call_log: Path


@pytest.fixture(scope="module")
def mcp_stack(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, session_factory: sessionmaker[Session]
) -> Iterator[McpStack]:
    clear_stored_list(session_factory)  # the env list below is the one in force
    base = tmp_path_factory.mktemp("mcp")
    repo = make_repo(base / "notebook")
    call_log = base / "hostile-calls.log"
    with serve_http_mcp() as notes:
        servers = [
            {"name": "time", "isolation": "none", "command": TIME},
            {"name": "git", "isolation": "none", "command": GIT},
            {
                "name": "h",
                "isolation": "none",
                "command": [*HOSTILE, str(call_log)],
                "projects": [PROJECT],
            },
            {"name": "gate", "isolation": "none", "command": HOSTILE, "approval": True},
            {"name": "notes", "url": notes.url},
        ]
        svc = Services(stack, base)
        svc.env.update(
            {
                "LEAFLAB_MCP_SERVERS": json.dumps(servers),
                "LEAFLAB_MCP_CALL_TIMEOUT_S": "4",
                "LEAFLAB_WEB_ALLOW": notes.allow_entry,
            }
        )
        try:
            sim = svc.simulator()
            url = svc.api()
            worker = svc.worker()
            yield McpStack(svc, sim, url, worker, repo, call_log)
        finally:
            svc.stop()


def member_of_project(factory: sessionmaker[Session]) -> builders.TestUser:
    """A new user, member of the project the scoped server is offered to."""
    user = make_user(factory)
    with factory() as db, db.begin():
        project = db.scalar(select(Project).where(Project.name == PROJECT))
        project = project or create_project(db, name=PROJECT)
        found = db.get(User, user.id)
        assert found is not None
        add_member(db, project=project, user=found, role="member")
    return user


def start(ms: McpStack, client: httpx.Client, replies: list[dict[str, Any]], **body: Any) -> str:
    session = client.post("/v1/sessions", json={"title": "mcp", **body}).json()
    ms.sim.set_script(session["id"], {"replies": replies})
    return str(
        client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "use the tools"}
        ).json()["job_id"]
    )


def tool_steps(client: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    return [s for s in steps if s["kind"] == "tool"]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_time_and_git_servers_answer_a_job(
    mcp_stack: McpStack, session_factory: sessionmaker[Session]
) -> None:
    client = client_for(mcp_stack.url, make_user(session_factory))
    repo = str(mcp_stack.repo)
    job_id = start(
        mcp_stack,
        client,
        [
            call("mcp.time.get_current_time", timezone="Europe/Paris"),
            call("mcp.git.git_status", repo_path=repo),
            call("mcp.git.git_log", repo_path=repo),
            call("mcp.notes.lookup", key="centrifuge"),
            {"content": "It is evening in Paris; two commits."},
        ],
    )
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    steps = tool_steps(client, job_id)
    assert [s["status"] for s in steps] == ["succeeded"] * 4, steps
    now = json.loads(steps[0]["result"]["content"])
    assert now["timezone"] == "Europe/Paris"
    assert "draft.txt" in steps[1]["result"]["content"]
    assert "Record the second measurement" in steps[2]["result"]["content"]
    assert "centrifuge is booked" in steps[3]["result"]["content"]  # HTTP, through the guard


def test_a_scoped_server_is_refused_outside_its_project(
    mcp_stack: McpStack, session_factory: sessionmaker[Session]
) -> None:
    outsider = client_for(mcp_stack.url, make_user(session_factory))
    job_id = start(mcp_stack, outsider, [call("mcp.h.echo", text="hi"), {"content": "done"}])
    assert wait_job(outsider, job_id, timeout_s=60)["status"] == "succeeded"
    [step] = tool_steps(outsider, job_id)
    assert step["status"] == "failed" and step["error"]["code"] == "not_offered", step

    member = client_for(mcp_stack.url, member_of_project(session_factory))
    job_id = start(
        mcp_stack, member, [call("mcp.h.echo", text="hi"), {"content": "done"}], project=PROJECT
    )
    assert wait_job(member, job_id, timeout_s=60)["status"] == "succeeded"
    [step] = tool_steps(member, job_id)
    assert step["status"] == "succeeded" and step["result"]["content"] == "echo: hi", step


def test_hostile_tools_fail_clearly_and_the_worker_keeps_running(
    mcp_stack: McpStack, session_factory: sessionmaker[Session]
) -> None:
    member = client_for(mcp_stack.url, member_of_project(session_factory))
    job_id = start(
        mcp_stack,
        member,
        [
            call("mcp.h.hang"),
            call("mcp.h.garbage"),
            call("mcp.h.huge", anything="x"),
            call("mcp.h.crash"),
            call("mcp.h.echo", text="after all that"),
            {"content": "survived"},
        ],
        project=PROJECT,
    )
    job = wait_job(member, job_id, timeout_s=120)
    assert job["status"] == "succeeded", job
    steps = tool_steps(member, job_id)
    codes = [(s["status"], (s["error"] or {}).get("code")) for s in steps]
    assert codes == [
        ("failed", "timeout"),
        ("failed", "mcp_error"),
        ("failed", "unknown_tool"),
        ("failed", "mcp_error"),
        ("succeeded", None),
    ], steps
    assert "within 4 s" in steps[0]["error"]["message"]
    assert "not a valid tool result" in steps[1]["error"]["message"]
    assert "over the 32000 allowed" in steps[2]["error"]["message"]
    assert "closed the connection" in steps[3]["error"]["message"]
    assert steps[4]["result"]["content"] == "echo: after all that"
    assert mcp_stack.worker.popen.poll() is None  # the worker process is still up


def test_a_server_marked_for_approval_waits_for_a_human(
    mcp_stack: McpStack, session_factory: sessionmaker[Session]
) -> None:
    client = client_for(mcp_stack.url, make_user(session_factory))
    job_id = start(mcp_stack, client, [call("mcp.gate.echo", text="ship it"), {"content": "ok"}])
    wait_job(client, job_id, timeout_s=60, statuses=("waiting_approval", "succeeded", "failed"))
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "waiting_approval"
    [approval] = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    assert approval["kind"] == "command" and approval["tool_name"] == "mcp.gate.echo"
    assert "ship it" in approval["diffs"][0]["command"]
    assert tool_steps(client, job_id) == []  # nothing ran yet
    decided = client.post(
        f"/v1/jobs/{job_id}/approvals/{approval['id']}", json={"decision": "apply"}
    )
    assert decided.status_code == 200, decided.text
    assert wait_job(client, job_id, timeout_s=60)["status"] == "succeeded"
    [step] = tool_steps(client, job_id)
    assert step["status"] == "succeeded" and step["result"]["content"] == "echo: ship it"


def test_an_interrupted_external_call_is_not_run_again(
    mcp_stack: McpStack, session_factory: sessionmaker[Session]
) -> None:
    ms = mcp_stack
    member = client_for(ms.url, member_of_project(session_factory))
    before = _calls(ms.call_log).count("hang")
    job_id = start(ms, member, [call("mcp.h.hang"), {"content": "after"}], project=PROJECT)
    deadline = time.monotonic() + 30
    while _calls(ms.call_log).count("hang") == before:  # the server has the call
        assert time.monotonic() < deadline, "the hang call never reached the server"
        time.sleep(0.05)
    ms.worker.kill9()
    ms.worker = ms.services.worker()
    job = wait_job(member, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    [step] = tool_steps(member, job_id)
    assert step["status"] == "interrupted", step
    assert "not run again" in step["error"]["message"]
    assert _calls(ms.call_log).count("hang") == before + 1  # never repeated


def _calls(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []
