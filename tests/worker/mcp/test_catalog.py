"""MCP servers as real processes behind the catalog: discovery limits, hostile servers,
project scoping, the address guard. No Leaflab stack: the tools are called directly."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore2
import httpx2
import pytest

from services.common.net_guard import AddressRefused, NetGuard, parse_allow_list
from services.worker.tools.base import ToolEffect, ToolError
from services.worker.tools.mcp import McpCatalog, McpSettings
from services.worker.tools.mcp.http_guard import guarded_client
from services.worker.tools.mcp.loop import McpLoop
from tests.worker.mcp.conftest import GIT, HOSTILE, TIME, HttpServer, make_repo


def catalog(servers: list[dict[str, Any]], allow: str = "", **limits: Any) -> McpCatalog:
    settings = McpSettings(
        mcp_servers=json.dumps(servers),
        mcp_start_timeout_s=15,
        mcp_call_timeout_s=limits.pop("timeout", 3),
        **limits,
    )
    found = McpCatalog.from_settings(settings, guard=NetGuard(parse_allow_list(allow)))
    assert found is not None
    return found


def call(cat: McpCatalog, name: str, project: str | None = None, **arguments: Any) -> str:
    tool = cat.tool(name, None, project)
    return tool.run(tool.parse(arguments), None).content  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def hostile() -> Iterator[McpCatalog]:
    cat = catalog([{"name": "h", "isolation": "none", "command": HOSTILE}])
    yield cat
    cat.close()


def test_time_server_lists_its_tools_with_schemas_and_answers() -> None:
    cat = catalog([{"name": "time", "isolation": "none", "command": TIME}])
    try:
        offer = cat.offer(None, None)
        names = [t.name for t in offer.tools]
        assert names == ["mcp.time.convert_time", "mcp.time.get_current_time"]
        tool = cat.tool("mcp.time.get_current_time", None, None)
        schema = tool.openai_schema()["function"]
        assert schema["parameters"]["required"] == ["timezone"]
        assert tool.effect is ToolEffect.READ_ONLY and tool.retry_safe  # from its annotations
        answer = json.loads(call(cat, "mcp.time.get_current_time", timezone="Asia/Tokyo"))
        assert answer["timezone"] == "Asia/Tokyo" and answer["datetime"].endswith("+09:00")
        with pytest.raises(ToolError, match="timezone: 7 is not of type 'string'"):
            tool.parse({"timezone": 7})
    finally:
        cat.close()


def test_git_server_reads_a_repository_the_test_made(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "notebook")
    cat = catalog([{"name": "git", "isolation": "none", "command": GIT}])
    try:
        status = call(cat, "mcp.git.git_status", repo_path=str(repo))
        assert "draft.txt" in status
        log = call(cat, "mcp.git.git_log", repo_path=str(repo))
        assert "Record the second measurement" in log and "Start the lab notebook" in log
    finally:
        cat.close()


def test_hostile_schemas_are_skipped_with_a_reason(hostile: McpCatalog) -> None:
    offer = hostile.offer(None, None)
    assert sorted(t.name for t in offer.tools) == [
        "mcp.h.crash", "mcp.h.echo", "mcp.h.env", "mcp.h.garbage", "mcp.h.hang",
    ]  # fmt: skip
    reasons = {p.tool: p.reason for p in offer.problems}
    assert "over the 32000 allowed" in reasons["huge"]
    assert "not valid JSON Schema" in reasons["broken_schema"]
    with pytest.raises(ToolError, match="over the 32000 allowed"):
        hostile.tool("mcp.h.huge", None, None)
    echo = hostile.tool("mcp.h.echo", None, None)
    assert echo.effect is ToolEffect.EXTERNAL and not echo.retry_safe  # no annotations


def test_a_hanging_tool_times_out_and_the_server_still_answers(hostile: McpCatalog) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError) as err:
        call(hostile, "mcp.h.hang")
    assert err.value.code == "timeout" and "within 3 s" in err.value.message
    assert time.monotonic() - started < 6
    assert call(hostile, "mcp.h.echo", text="still here") == "echo: still here"


def test_a_malformed_reply_is_a_clear_error(hostile: McpCatalog) -> None:
    with pytest.raises(ToolError) as err:
        call(hostile, "mcp.h.garbage")
    assert err.value.code == "mcp_error"
    assert "not a valid tool result" in err.value.message


def test_a_crashing_server_is_an_error_and_is_started_again(hostile: McpCatalog) -> None:
    with pytest.raises(ToolError) as err:
        call(hostile, "mcp.h.crash")
    assert err.value.code == "mcp_error" and "closed the connection" in err.value.message
    assert call(hostile, "mcp.h.echo", text="again") == "echo: again"


def test_a_server_that_cannot_start_is_skipped_and_others_stay(tmp_path: Path) -> None:
    missing = {"name": "gone", "isolation": "none", "command": [str(tmp_path / "missing")]}
    cat = catalog([missing, {"name": "time", "isolation": "none", "command": TIME}])
    try:
        offer = cat.offer(None, None)
        assert {t.name.split(".")[1] for t in offer.tools} == {"time"}
        [problem] = offer.problems
        assert problem.server == "gone" and "cannot run its command" in problem.reason
    finally:
        cat.close()


def test_a_stdio_server_gets_none_of_the_workers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAFLAB_DATABASE_URL", "postgresql://secret@db/leaflab")
    monkeypatch.setenv("LEAFLAB_INTERNAL_TOKEN", "canary-token")
    cat = catalog([{"name": "h", "isolation": "none", "command": HOSTILE}])
    try:
        seen = json.loads(call(cat, "mcp.h.env"))
    finally:
        cat.close()
    assert not [n for n in seen["names"] if n.startswith("LEAFLAB_")], seen
    assert set(seen["names"]) <= {"HOME", "TMPDIR", "LANG", "LC_ALL", "PATH", "LOGNAME",
                                  "SHELL", "TERM", "USER", "PWD"}  # fmt: skip
    assert Path(seen["cwd"]).name.startswith("leaflab-mcp-h-")  # a folder of its own


def test_project_scoping_offers_and_calls_only_within_the_projects() -> None:
    cat = catalog([{"name": "time", "isolation": "none", "command": TIME, "projects": ["thesis"]}])
    try:
        assert cat.offer("some-id", "other").tools == []
        assert cat.offer(None, None).tools == []
        with pytest.raises(ToolError) as err:
            cat.tool("mcp.time.get_current_time", "some-id", "other")
        assert err.value.code == "not_offered"
        assert len(cat.offer("some-id", "thesis").tools) == 2
        assert cat.tool("mcp.time.get_current_time", "some-id", "thesis").name
    finally:
        cat.close()


def test_http_server_only_through_the_address_guard(http_mcp: HttpServer) -> None:
    allowed = catalog([{"name": "notes", "url": http_mcp.url}], allow=http_mcp.allow_entry)
    refused = catalog([{"name": "notes", "url": http_mcp.url}])
    try:
        answer = call(allowed, "mcp.notes.lookup", key="centrifuge")
        assert answer.startswith("notes for centrifuge")
        offer = refused.offer(None, None)
        assert offer.tools == []
        assert "refused by the address guard" in offer.problems[0].reason
        assert "loopback" in offer.problems[0].reason
    finally:
        allowed.close()
        refused.close()


def test_the_guarded_transport_refuses_at_connect_time(http_mcp: HttpServer) -> None:
    # The URL pre-check aside: the connection itself is checked (rebinding, redirects).
    async def fetch() -> None:
        async with guarded_client(NetGuard(), timeout_s=5) as client:
            await client.post(http_mcp.url, json={})

    # On the worker's own loop thread, as in production: the calling thread may already
    # have a running loop (Playwright's sync API leaves one in the full suite).
    with pytest.raises((AddressRefused, httpx2.HTTPError, httpcore2.ConnectError)) as err:
        McpLoop().run(fetch(), timeout_s=10)
    assert "loopback" in str(err.value)
