"""Fixtures for the tool tests: a real workspace directory and a recording context."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.worker.tools.base import ToolContext


class Events(list[tuple[str, dict[str, Any]]]):
    """Every (type, payload) a tool emitted, in order."""

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        self.append((kind, payload))


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def ctx(workspace: Path, events: Events) -> ToolContext:
    return ToolContext(
        job_id="job-1",
        session_id=None,
        user_id="user-1",
        project_id=None,
        workspace=workspace,
        tool_call_id="call-1",
        step_key="job-1:0:0:call-1",
        emit=events,
    )


WriteTree = Callable[[dict[str, str | bytes]], None]


@pytest.fixture
def write_tree(workspace: Path) -> WriteTree:
    """Create files (text or bytes) under the workspace, with their folders."""

    def write(files: dict[str, str | bytes]) -> None:
        for rel, body in files.items():
            path = workspace / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(body, bytes):
                path.write_bytes(body)
            else:
                path.write_text(body)

    return write


@pytest.fixture
def project(ctx: ToolContext, write_tree: WriteTree) -> ToolContext:
    """A small research project: notes, code, a paper draft, a binary and VCS files."""
    write_tree(
        {
            "README.md": "Leaflab notes\nTODO: cite paper\n",
            "src/main.py": "def main():\n    return 1  # TODO later\n",
            "src/pkg/util.py": "def helper(x):\n    return x\n",
            "src/pkg/data.bin": b"\x00\x01TODO\x00",
            "paper/draft.tex": "\\section{Intro}\nTODO: write\n",
            ".git/config": "TODO inside git\n",
        }
    )
    return ctx
