"""Stage gather: the project's library first (the agent's own library_search tool),
then the seed DOIs, validated against OpenAlex (the paper_validate tool's client).

The result is the survey's paper set, each with its key, metadata and the
passages found (which the read stage notes and the verify stage checks
against). Keys are assigned in a stable order, so a rerun over the same library
gives the same keys.
"""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy import select

from services.common.models import Document
from services.common.surveys import CHUNK_CHARS, CHUNKS_PER_PAPER
from services.worker.survey.citations import guess_year, make_key
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import stage_key
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.library_search import LibrarySearchArgs, LibrarySearchTool
from services.worker.tools.papers.openalex import OpenAlex, normalise_doi
from services.worker.tools.web.settings import ResearchToolSettings

log = logging.getLogger(__name__)
HITS_PER_QUERY = 12


def run_gather(ctx: SurveyContext, plan: dict[str, Any]) -> dict[str, Any]:
    key = stage_key("gather")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    ctx.report(stage="gather")
    found = _search_library(ctx, plan["search_queries"])
    papers = _library_papers(ctx, found)
    unresolved_seeds = _add_seeds(ctx, papers)
    papers = [p for p in papers if _in_years(p["year"], ctx.job.input.get("years"))]
    ranked = sorted(papers, key=lambda p: (-p["score"], p["title"].lower()))
    chosen = sorted(ranked[: ctx.job.papers_wanted], key=lambda p: p["title"].lower())
    taken: set[str] = set()
    by_key: dict[str, dict[str, Any]] = {}
    for paper in chosen:
        paper["key"] = make_key(
            title=paper["title"], authors=paper["authors"], year=paper["year"], taken=taken
        )
        by_key[paper["key"]] = paper
    result = {"papers": by_key, "unresolved_seeds": unresolved_seeds}
    ctx.done(key, stage="gather", result=result)
    ctx.report(papers_found=len(by_key))
    return result


def _in_years(year: int | None, years: str | None) -> bool:
    """Whether a paper fits the survey's years; one whose year is unknown is kept."""
    if year is None or not years:
        return True
    first, _, last = years.partition("-")
    return int(first) <= year <= int(last or first)


def _search_library(ctx: SurveyContext, queries: list[str]) -> dict[str, dict[str, Any]]:
    """document_id → {score, chunks}: the best passages per document over all queries."""
    tool = LibrarySearchTool()
    tool_ctx = ToolContext(
        job_id=str(ctx.job.job_id),
        session_id=str(ctx.job.session_id) if ctx.job.session_id else None,
        user_id=str(ctx.job.user_id),
        project_id=str(ctx.job.project_id) if ctx.job.project_id else None,
        workspace=Path("."),
        tool_call_id="survey-gather",
        step_key=stage_key("gather"),
        emit=lambda *_: None,
        library=ctx.deps.library,
    )

    def search(query: str) -> list[dict[str, Any]]:
        try:
            args = LibrarySearchArgs(query=query, mode="survey", k=HITS_PER_QUERY)
            items: list[dict[str, Any]] = tool.run(args, tool_ctx).data.get("items", [])
            return items
        except ToolError as err:
            # No library (or it is down) leaves the seeds; the runner fails the
            # survey clearly when no paper at all was found.
            log.warning("survey gather: library search failed: %s", err)
            return []

    # The queries are independent: asked at once, merged in query order (stable keys).
    with ThreadPoolExecutor(max_workers=len(queries) or 1) as pool:
        answers = list(pool.map(search, queries))
    found: dict[str, dict[str, Any]] = {}
    for items in answers:
        for hit in items:
            doc = hit.get("document_id")
            if not doc or not hit.get("text"):
                continue
            entry = found.setdefault(doc, {"score": 0.0, "chunks": {}})
            entry["score"] += float(hit.get("score") or 0.0)
            locator = str(hit.get("locator") or f"p{hit.get('page')}")
            entry["chunks"].setdefault(
                locator,
                {
                    "locator": locator,
                    "page": hit.get("page"),
                    "section": hit.get("section"),
                    "text": str(hit["text"])[:CHUNK_CHARS],
                },
            )
    return found


def _library_papers(ctx: SurveyContext, found: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    if not found:
        return []
    with ctx.deps.factory() as db:
        rows = db.scalars(
            select(Document).where(Document.id.in_([uuid.UUID(d) for d in found]))
        ).all()
    papers = []
    for doc in rows:
        entry = found[str(doc.id)]
        chunks = list(entry["chunks"].values())[:CHUNKS_PER_PAPER]
        for index, chunk in enumerate(chunks, start=1):
            chunk["chunk_id"] = f"c{index}"
        structure = doc.structure or {}
        title = (doc.title or doc.filename or "Untitled").strip()
        papers.append(
            {
                "title": title,
                "authors": [str(a) for a in structure.get("authors") or []],
                "year": guess_year(doc.filename),
                "doi": structure.get("doi"),
                "document_id": str(doc.id),
                "openalex_id": None,
                "filename": doc.filename,
                "score": round(entry["score"], 6),
                "chunks": chunks,
            }
        )
    return papers


def _add_seeds(ctx: SurveyContext, papers: list[dict[str, Any]]) -> list[str]:
    """Seed DOIs not already among the library papers, looked up in OpenAlex; the
    ones that cannot be validated are returned (and reported), never cited."""
    seeds = [normalise_doi(s) for s in ctx.job.input.get("seed_papers") or []]
    have = {p["doi"] for p in papers if p.get("doi")}
    unresolved: list[str] = []
    wanted = [s for s in seeds if s and s not in have]
    if not wanted:
        return [s for s in ctx.job.input.get("seed_papers") or [] if normalise_doi(s) is None]
    openalex = OpenAlex(ResearchToolSettings())
    for doi in wanted:
        try:
            work = openalex.by_doi(doi)
        except ToolError as err:
            log.warning("survey gather: OpenAlex look-up of %s failed: %s", doi, err)
            work = None
        if work is None or work.is_retracted:
            unresolved.append(doi)
            continue
        papers.append(
            {
                "title": work.title,
                "authors": list(work.authors),
                "year": work.year,
                "doi": work.doi,
                "document_id": None,
                "openalex_id": work.openalex_id,
                "filename": None,
                # Seeds were asked for by name: they rank first.
                "score": 1e6,
                # The record itself is the only source text a note can point at.
                "chunks": [
                    {
                        "chunk_id": "c1",
                        "locator": f"openalex:{work.openalex_id}",
                        "page": None,
                        "section": "OpenAlex record",
                        "text": work.line(),
                    }
                ],
            }
        )
    return unresolved
