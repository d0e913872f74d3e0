"""The MCP server list an admin stores through the API, followed by a running worker.

Real stack: API, agent worker (a real process, started before any change),
Postgres, the model simulator. An admin PUTs a server; a job started after it
calls the server's tool (it runs isolated, in a sandbox container); DELETE puts
the env list (here: none) back, and the next job is told the tool is unknown.
Members are refused (403); a bad entry is a 422 naming it, and stores nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.sandbox.image import ensure_image
from services.sandbox.settings import SandboxSettings
from tests.conftest import Stack
from tests.fixtures import builders
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services, Simulator
from tests.library.test_import_cli import ENTRY_POINT
from tests.sandbox.conftest import require_docker
from tests.worker.mcp.conftest import TIME, clear_stored_list
from tests.worker.mcp.test_mcp_jobs import call, start, tool_steps

RELOAD_S = 0.5


@dataclass
class ListStack:
    services: Services
    sim: Simulator
    url: str
    admin: builders.TestUser


@pytest.fixture(scope="module")
def list_stack(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, session_factory: sessionmaker[Session]
) -> Iterator[ListStack]:
    require_docker("for isolated MCP servers")
    ensure_image(SandboxSettings())
    clear_stored_list(session_factory)
    svc = Services(stack, Path(tmp_path_factory.mktemp("mcp-list")))
    svc.env.update({"LEAFLAB_MCP_SERVERS": "", "LEAFLAB_MCP_RELOAD_S": str(RELOAD_S)})
    try:
        sim = svc.simulator()
        url = svc.api()
        svc.worker()
        yield ListStack(svc, sim, url, make_user(session_factory, admin=True))
    finally:
        svc.stop()
        clear_stored_list(session_factory)


def test_a_stored_server_is_offered_to_new_jobs_without_a_restart(
    list_stack: ListStack, session_factory: sessionmaker[Session]
) -> None:
    admin = client_for(list_stack.url, list_stack.admin)
    before = admin.get("/v1/admin/mcp-servers").json()
    assert before["source"] == "environment" and before["servers"] == []

    put = admin.put("/v1/admin/mcp-servers", json={"servers": [{"name": "clock", "command": TIME}]})
    assert put.status_code == 200, put.text
    stored = put.json()
    assert stored["source"] == "database" and stored["version"] > before["version"]
    assert [s["name"] for s in stored["servers"]] == ["clock"]
    assert stored["servers"][0]["isolation"] == "sandbox"
    time.sleep(RELOAD_S * 2)

    user = client_for(list_stack.url, make_user(session_factory))
    job_id = start(
        list_stack,  # type: ignore[arg-type]
        user,
        [call("mcp.clock.get_current_time", timezone="Asia/Tokyo"), {"content": "noted"}],
    )
    assert wait_job(user, job_id, timeout_s=90)["status"] == "succeeded"
    [step] = tool_steps(user, job_id)
    assert step["status"] == "succeeded", step
    assert json.loads(step["result"]["content"])["timezone"] == "Asia/Tokyo"

    cleared = admin.delete("/v1/admin/mcp-servers")
    assert cleared.status_code == 200 and cleared.json()["source"] == "environment"
    time.sleep(RELOAD_S * 2)
    job_id = start(
        list_stack,  # type: ignore[arg-type]
        user,
        [call("mcp.clock.get_current_time", timezone="UTC"), {"content": "noted"}],
    )
    assert wait_job(user, job_id, timeout_s=90)["status"] == "succeeded"
    [step] = tool_steps(user, job_id)
    assert step["status"] == "failed" and step["error"]["code"] == "unknown_tool", step


def test_members_are_refused_and_bad_entries_are_named(
    list_stack: ListStack, session_factory: sessionmaker[Session]
) -> None:
    member = client_for(list_stack.url, make_user(session_factory))
    body = {"servers": [{"name": "evil", "command": ["sh"], "isolation": "none"}]}
    assert member.put("/v1/admin/mcp-servers", json=body).status_code == 403
    assert member.get("/v1/admin/mcp-servers").status_code == 403
    assert member.delete("/v1/admin/mcp-servers").status_code == 403

    admin = client_for(list_stack.url, list_stack.admin)
    version = admin.get("/v1/admin/mcp-servers").json()["version"]
    bad = admin.put(
        "/v1/admin/mcp-servers",
        json={
            "servers": [{"name": "ok", "url": "https://n.lab/mcp"}, {"name": "x", "command": []}]
        },
    )
    assert bad.status_code == 422, bad.text
    error = bad.json()["error"]
    assert error["code"] == "invalid_mcp_servers"
    assert error["message"].startswith("servers[1] ('x'): ")  # the entry, by index and name
    assert "'command' must name a program" in error["message"]
    after = admin.get("/v1/admin/mcp-servers").json()
    assert after["version"] == version and after["source"] == "environment"  # nothing stored
    twice = admin.put(
        "/v1/admin/mcp-servers",
        json={"servers": [{"name": "a", "url": "https://n.lab/mcp"}] * 2},
    )
    assert twice.status_code == 422 and "repeated: ['a']" in twice.json()["error"]["message"]


def _cli(url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LEAFLAB_")}
    return subprocess.run(  # noqa: S603 - our own interpreter and CLI
        [sys.executable, "-c", ENTRY_POINT, "admin", "mcp-servers", *args],
        env={**clean, "LEAFLAB_URL": url, "LEAFLAB_API_KEY": key, "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_reads_sets_and_clears_the_stored_list(
    list_stack: ListStack, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    key = list_stack.admin.key
    good = tmp_path / "servers.json"
    good.write_text(json.dumps({"servers": [{"name": "clock", "command": TIME, "approval": True}]}))
    stored = _cli(list_stack.url, key, "--set", str(good))
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("1 server(s) from the database")
    shown = _cli(list_stack.url, key)
    assert "  mcp.clock: " in shown.stdout and "(needs approval)" in shown.stdout

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "x", "command": []}]))
    refused = _cli(list_stack.url, key, "--set", str(bad))
    assert refused.returncode == 1 and "invalid_mcp_servers" in refused.stderr
    assert json.loads(_cli(list_stack.url, key, "--json").stdout)["servers"][0]["name"] == "clock"

    member = make_user(session_factory)
    assert "HTTP 403" in _cli(list_stack.url, member.key, "--clear").stderr
    cleared = _cli(list_stack.url, key, "--clear")
    assert cleared.returncode == 0 and cleared.stdout.startswith("0 server(s) from the environment")
