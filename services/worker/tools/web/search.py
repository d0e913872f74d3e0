"""`web_search(query, count?)`: the Brave Search API, as a numbered list of results.

Without ``LEAFLAB_BRAVE_API_KEY`` the tool answers ``not_configured`` at once
(nothing is sent). Rate limits and server errors are retryable failures.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.web.outbound import get_json
from services.worker.tools.web.settings import ResearchToolSettings

MAX_SEARCH_BYTES = 2_000_000


class WebSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=400, description="what to search the web for")
    count: int = Field(default=8, ge=1, le=20, description="how many results")


class WebSearchTool(Tool[WebSearchArgs]):
    name = "web_search"
    description = (
        "Search the web (Brave Search). Returns numbered results with title, URL and "
        "snippet; read a page with web_fetch or a PDF with pdf_fetch."
    )
    args_model = WebSearchArgs
    effect = ToolEffect.READ_ONLY
    retry_safe = True
    timeout_s = 60.0

    def __init__(self, settings: ResearchToolSettings) -> None:
        self._settings = settings
        self._guard = settings.net_guard()

    def run(self, args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
        key = self._settings.brave_api_key
        if not key:
            raise ToolError(
                "not_configured",
                "web search is not configured: set LEAFLAB_BRAVE_API_KEY to a Brave Search "
                "API key (web_fetch, pdf_fetch and paper_search work without one)",
                category="configuration",
            )
        answer = get_json(
            f"{self._settings.brave_base_url.rstrip('/')}/web/search",
            guard=self._guard,
            params={"q": args.query, "count": args.count},
            headers={"X-Subscription-Token": key},
            service="Brave Search",
            max_bytes=MAX_SEARCH_BYTES,
            timeout_s=self._settings.web_fetch_timeout_s,
        )
        results = _results(answer)[: args.count]
        if not results:
            return ToolResult(f"No web results for {args.query!r}.", {"results": []})
        lines = [
            f"[{i}] {r['title']}\n{r['url']}\n{r['snippet']}".rstrip()
            for i, r in enumerate(results, start=1)
        ]
        return ToolResult("\n\n".join(lines), {"results": results})


def _results(answer: Any) -> list[dict[str, str]]:
    """Brave's ``web.results`` as {title, url, snippet, age}; tolerant of missing parts."""
    web = answer.get("web") if isinstance(answer, dict) else None
    raw = web.get("results") if isinstance(web, dict) else None
    out: list[dict[str, str]] = []
    for item in raw or []:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        snippet = " ".join(
            s for s in [item.get("description"), *(item.get("extra_snippets") or [])] if s
        )
        out.append(
            {
                "title": _plain(item.get("title")) or item["url"],
                "url": item["url"],
                "snippet": _plain(snippet),
                "age": str(item.get("age") or item.get("page_age") or ""),
            }
        )
    return out


def _plain(text: Any) -> str:
    # Brave marks query words with <strong>; the model needs none of that.
    value = str(text or "")
    for tag in ("<strong>", "</strong>", "<b>", "</b>"):
        value = value.replace(tag, "")
    return value.strip()
