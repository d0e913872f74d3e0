"""Fixtures for the tool tests: a real workspace directory and a recording context."""

from __future__ import annotations

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
