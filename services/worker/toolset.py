"""Which tools the agent is offered."""

from __future__ import annotations

from services.worker.tools.base import Tool
from services.worker.tools.code import code_tools
from services.worker.tools.files import file_tools
from services.worker.tools.library_search import library_tools
from services.worker.tools.registry import ToolRegistry
from services.worker.tools.session_history import SessionHistoryTool
from services.worker.tools.subagent import subagent_tool
from services.worker.tools.todo import todo_tool


def build_registry() -> ToolRegistry:
    tools: list[Tool] = [*file_tools(), todo_tool(), *code_tools(), *library_tools()]
    tools += [SessionHistoryTool(), subagent_tool()]
    return ToolRegistry(tools)
