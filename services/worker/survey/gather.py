"""Stage gather: the project's library first (the agent's own library_search tool),
then the seed DOIs and, when the library holds too few papers, an OpenAlex
search (openalex_source.py); the chosen OpenAlex papers' open-access PDFs are
then fetched into the project library (oa_fetch.py) and, once the library has
ingested them, read from its passages (library_passages.py).

The result is the survey's paper set, each with its key, metadata and the
passages found (which the read stage notes and the verify stage checks
against). Keys are assigned in a stable order, so a rerun over the same library
gives the same keys.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import select

from services.common.models import Document
from services.common.surveys import CHUNK_CHARS, CHUNKS_PER_PAPER
from services.worker.survey.citations import guess_year, make_key
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import stage_key
from services.worker.survey.library_passages import read_from_library
from services.worker.survey.oa_fetch import SurveyFetchSettings, fetch_open_access
from services.worker.survey.openalex_source import add_seeds, search_ahead, search_openalex
from services.worker.tools.base import ToolError
from services.worker.tools.library_search import LibrarySearchArgs, LibrarySearchTool
from services.worker.tools.papers.openalex import Work

log = logging.getLogger(__name__)
HITS_PER_QUERY = 12


def run_gather(
    ctx: SurveyContext, plan: dict[str, Any], topic_works: Callable[[], list[Work]] | None = None
) -> dict[str, Any]:
    """``topic_works``: the OpenAlex topic search, when the runner started it earlier
    (it needs no plan, so it runs while the plan's model call does)."""
    key = stage_key("gather")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    ctx.report(stage="gather")
    topic_works = topic_works or search_ahead(ctx)
    found = _search_library(ctx, plan["search_queries"])
    # Seeds are kept whatever their year (they were asked for by name).
    papers = [p for p in _library_papers(ctx, found) if ctx.job.in_years(p["year"])]
    unresolved_seeds = add_seeds(ctx, papers)
    # "What's new since" (``since``) is about the library's new papers: an OpenAlex
    # topic search would fill the report with old ones.
    if len(papers) < ctx.job.papers_wanted and ctx.job.added_since is None:
        # Too little in the library: OpenAlex records fill the rest (each validated
        # by being OpenAlex's own, never a title the model made up).
        wanted = ctx.job.papers_wanted - len(papers)
        papers += search_openalex(ctx, papers, topic_works(), limit=wanted)
    ranked = sorted(papers, key=lambda p: (-p["score"], p["title"].lower()))
    chosen = fetch_open_access(
        ctx, sorted(ranked[: ctx.job.papers_wanted], key=lambda p: p["title"].lower())
    )
    wait_s = SurveyFetchSettings().survey_ingest_wait_s
    read_from_library(ctx, chosen, plan["search_queries"], wait_s)
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


def _search_library(ctx: SurveyContext, queries: list[str]) -> dict[str, dict[str, Any]]:
    """document_id → {score, chunks}: the best passages per document over all queries."""
    tool = LibrarySearchTool()
    tool_ctx = ctx.tool_context(call="survey-gather", step_key=stage_key("gather"))

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
    stmt = select(Document).where(Document.id.in_([uuid.UUID(d) for d in found]))
    if ctx.job.added_since is not None:
        stmt = stmt.where(Document.created_at >= ctx.job.added_since)
    with ctx.deps.factory() as db:
        rows = db.scalars(stmt).all()
    papers = []
    for doc in rows:
        entry = found[str(doc.id)]
        chunks = list(entry["chunks"].values())[:CHUNKS_PER_PAPER]
        for index, chunk in enumerate(chunks, start=1):
            chunk["chunk_id"] = f"c{index}"
        structure = doc.structure or {}
        title = (doc.title or doc.filename or "Untitled").strip()
        # The document's own metadata (extracted at ingest or corrected by hand,
        # services/library/metadata); the file name's year only when it has none.
        papers.append(
            {
                "title": title,
                "authors": [str(a) for a in doc.authors or []],
                "year": doc.year or guess_year(doc.filename),
                "doi": doc.doi or structure.get("doi"),
                "venue": doc.venue,
                "arxiv_id": doc.arxiv_id,
                "document_id": str(doc.id),
                "openalex_id": None,
                "filename": doc.filename,
                "score": round(entry["score"], 6),
                "chunks": chunks,
            }
        )
    return papers
