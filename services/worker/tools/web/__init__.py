"""Web research tools: web_search (Brave), web_fetch (pages), pdf_fetch (PDFs)."""

from __future__ import annotations

from typing import Any

from services.worker.tools.base import Tool
from services.worker.tools.ports import IngestQueue
from services.worker.tools.web.page import WebFetchTool
from services.worker.tools.web.pdf import PdfFetchTool
from services.worker.tools.web.search import WebSearchTool
from services.worker.tools.web.settings import ResearchToolSettings


def web_tools(settings: ResearchToolSettings, *, ingest: IngestQueue | None) -> list[Tool[Any]]:
    return [
        WebSearchTool(settings),
        WebFetchTool(settings),
        PdfFetchTool(settings, ingest=ingest),
    ]
