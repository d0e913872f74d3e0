"""What a subagent's job input narrows: its workspace and its tools.

A child job made by the ``agent`` tool carries ``workspace_session_id`` (its
parent's workspace, so the same files and sandbox) and ``tools`` (the names it
is offered; never ``agent``, so subagents do not nest). Other jobs carry
neither and get their own workspace and every tool.
"""

from __future__ import annotations

import uuid
from typing import Any

from services.worker.tools.subagent import NAME as AGENT_TOOL


def subagent_scope(job_input: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``JobIdentity``: the workspace and tools a job may use."""
    if "subagent_of" not in job_input:
        return {}
    workspace = job_input.get("workspace_session_id")
    tools = frozenset(str(t) for t in job_input.get("tools") or []) - {AGENT_TOOL}
    return {
        "workspace_session_id": uuid.UUID(workspace) if workspace else None,
        "tools": tools,
    }
