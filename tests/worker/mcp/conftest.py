"""MCP test servers: the hostile stdio server, the loopback HTTP server, a git repository."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.processes import free_port

HERE = Path(__file__).resolve().parent
HOSTILE = [sys.executable, str(HERE / "hostile_server.py")]
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
GIT = [sys.executable, "-m", "mcp_server_git"]


@dataclass(frozen=True)
class HttpServer:
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def allow_entry(self) -> str:
        return f"127.0.0.1:{self.port}"


@contextmanager
def serve_http_mcp() -> Iterator[HttpServer]:
    """The loopback streamable-HTTP server (a real process), stopped on exit."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "http_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, "the MCP HTTP server exited"
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.1)
        yield HttpServer(port)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def http_mcp() -> Iterator[HttpServer]:
    with serve_http_mcp() as server:
        yield server


def make_repo(path: Path) -> Path:
    """A git repository with two commits and one uncommitted file."""
    path.mkdir(parents=True)
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@lab.test",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@lab.test",
           "PATH": "/usr/bin:/bin"}  # fmt: skip

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (path / "notes.txt").write_text("first\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "Start the lab notebook")
    (path / "notes.txt").write_text("first\nsecond\n")
    git("commit", "-q", "-am", "Record the second measurement")
    (path / "draft.txt").write_text("not yet committed\n")
    return path


def clear_stored_list(factory: sessionmaker[Session]) -> None:
    """No stored MCP server list (an earlier test may have stored one): the env list applies."""
    with factory() as db, db.begin():
        db.execute(text("UPDATE mcp_server_lists SET servers = NULL, version = version + 1"))
