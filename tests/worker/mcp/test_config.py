"""A malformed LEAFLAB_MCP_SERVERS is refused with a message naming the entry and field,
by the parser and by a real worker process at start."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from services.worker.tools.mcp.settings import McpConfigError, parse_servers


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"name": "x"}', "must be a JSON list of servers, not dict"),
        ('[{"name": "x"}]', "[0] ('x'): (entry): Value error, give exactly one of 'command'"),
        ('[{"name": "x", "command": ["a"], "url": "http://h"}]', "give exactly one of"),
        ('[{"name": "bad name", "command": ["a"]}]', "[0] ('bad name'): name: String should"),
        ('[{"name": "x", "url": "ftp://h"}]', "'url' must be an http:// or https:// URL"),
        ('[{"name": "x", "command": []}]', "'command' must name a program"),
        ('[{"name": "x", "command": ["a"], "env": {}}]', "env: Extra inputs are not permitted"),
        ('[{"name": "x", "command": ["a"]}, {"name": "x", "url": "http://h"}]', "repeated"),
        ('[{"name": "x", "command": ["a"], "isolation": "off"}]', "isolation: Input should be"),
        (
            '[{"name": "x", "url": "http://h", "isolation": "none"}]',
            "stdio servers ('command') only",
        ),
    ],
)
def test_malformed_lists_are_refused_clearly(raw: str, message: str) -> None:
    with pytest.raises(McpConfigError) as err:
        parse_servers(raw)
    assert message in str(err.value)
    assert str(err.value).startswith("LEAFLAB_MCP_SERVERS")


def test_a_good_list_parses() -> None:
    [time, notes] = parse_servers(
        '[{"name": "time", "command": ["mcp-server-time"]},'
        ' {"name": "notes", "url": "https://n.lab/mcp", "projects": ["thesis"], "approval": true}]'
    )
    assert time.transport == "stdio" and time.offered_to(None, None)
    assert time.isolated  # in a sandbox container unless "isolation": "none" says otherwise
    [trusted] = parse_servers('[{"name": "t", "command": ["x"], "isolation": "none"}]')
    assert not trusted.isolated
    assert notes.transport == "http" and notes.approval
    assert notes.offered_to("id-1", "thesis") and not notes.offered_to("id-1", "other")
    assert parse_servers("") == ()


def test_the_worker_does_not_start_with_a_malformed_list() -> None:
    env = {**os.environ, "LEAFLAB_MCP_SERVERS": '[{"name": "time"}]'}
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "services.worker.app:app", "worker", "-Q", "agent"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "LEAFLAB_MCP_SERVERS[0] ('time'): (entry): Value error, give exactly one of" in (
        done.stdout + done.stderr
    )
