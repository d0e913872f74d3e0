"""Which tools the agent is offered."""

from __future__ import annotations

from services.worker.memory.tool import memory_tool
from services.worker.tools.base import Tool
from services.worker.tools.code import code_tools
from services.worker.tools.files import file_tools
from services.worker.tools.library_search import library_tools
from services.worker.tools.papers import paper_tools
from services.worker.tools.ports import IngestQueue
from services.worker.tools.registry import ToolRegistry
from services.worker.tools.session_history import SessionHistoryTool
from services.worker.tools.subagent import subagent_tool
from services.worker.tools.todo import todo_tool
from services.worker.tools.web import web_tools
from services.worker.tools.web.settings import ResearchToolSettings


def build_registry(
    *, research: ResearchToolSettings | None = None, ingest: IngestQueue | None = None
) -> ToolRegistry:
    """Every tool; the research tools read ``research`` (default: from the environment)."""
    research = research or ResearchToolSettings()
    tools: list[Tool] = [
        *file_tools(),
        todo_tool(),
        *code_tools(),
        *library_tools(),
        *web_tools(research, ingest=ingest),
        *paper_tools(research),
        memory_tool(),
    ]
    tools += [SessionHistoryTool(), subagent_tool()]
    return ToolRegistry(tools)
