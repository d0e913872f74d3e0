"""Scholarly-literature tools over OpenAlex: paper_search and paper_validate."""

from __future__ import annotations

from typing import Any

from services.worker.tools.base import Tool
from services.worker.tools.papers.search import PaperSearchTool
from services.worker.tools.papers.validate import PaperValidateTool
from services.worker.tools.web.settings import ResearchToolSettings


def paper_tools(settings: ResearchToolSettings) -> list[Tool[Any]]:
    return [PaperSearchTool(settings), PaperValidateTool(settings)]
