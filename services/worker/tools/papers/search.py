"""`paper_search(query, limit?, year_from?, year_to?)`: scholarly works from OpenAlex.

A query that is a DOI (bare, ``doi:`` or a doi.org URL) looks that work up
directly; anything else is OpenAlex's relevance search over titles, abstracts
and full text. Retracted works are marked in every line.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolResult
from services.worker.tools.papers.openalex import OpenAlex, normalise_doi
from services.worker.tools.web.settings import ResearchToolSettings


class PaperSearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=500, description="title words, topic or a DOI")
    limit: int = Field(default=10, ge=1, le=50, description="how many works")
    year_from: int | None = Field(
        default=None, ge=1500, le=2100, description="published in or after this year"
    )
    year_to: int | None = Field(
        default=None, ge=1500, le=2100, description="published in or before this year"
    )

    @model_validator(mode="after")
    def _years_in_order(self) -> PaperSearchArgs:
        if self.year_from and self.year_to and self.year_from > self.year_to:
            raise ValueError("year_from must not be after year_to")
        return self


class PaperSearchTool(Tool[PaperSearchArgs]):
    name = "paper_search"
    description = (
        "Search scholarly works (OpenAlex) by title words, topic or DOI. Returns title, "
        "year, authors, venue, DOI and OpenAlex id; retracted works are marked RETRACTED."
    )
    args_model = PaperSearchArgs
    effect = ToolEffect.READ_ONLY
    retry_safe = True
    timeout_s = 60.0

    def __init__(self, settings: ResearchToolSettings) -> None:
        self._openalex = OpenAlex(settings)

    def run(self, args: PaperSearchArgs, ctx: ToolContext) -> ToolResult:
        doi = normalise_doi(args.query)
        if doi is not None:
            work = self._openalex.by_doi(doi)
            works = [work] if work is not None else []
        else:
            works = self._openalex.search(
                args.query, limit=args.limit, year_from=args.year_from, year_to=args.year_to
            )
        if not works:
            return ToolResult(f"No works found for {args.query!r}.", {"works": []})
        lines = [f"[{i}] {w.line()}" for i, w in enumerate(works, start=1)]
        return ToolResult("\n".join(lines), {"works": [w.as_dict() for w in works]})
