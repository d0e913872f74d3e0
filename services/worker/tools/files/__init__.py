"""Workspace file tools: read_file, write_file, edit_file, glob, grep."""

from __future__ import annotations

from typing import Any

from services.worker.tools.base import Tool
from services.worker.tools.files.editing import EditFileTool, WriteFileTool
from services.worker.tools.files.globbing import GlobTool
from services.worker.tools.files.grepping import GrepTool
from services.worker.tools.files.reading import ReadFileTool

__all__ = ["EditFileTool", "GlobTool", "GrepTool", "ReadFileTool", "WriteFileTool", "file_tools"]


def file_tools() -> list[Tool[Any]]:
    """One instance of each file tool, for the runtime's ToolRegistry."""
    return [ReadFileTool(), WriteFileTool(), EditFileTool(), GlobTool(), GrepTool()]
