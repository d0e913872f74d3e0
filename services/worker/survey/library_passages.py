"""Fetched papers read from the library's own passages once it has ingested them.

``pdf_fetch`` hands gather the first pages' raw text at once; the library's
ingestion (layout-aware chunks with sections, tables and page numbers) ends
later. Gather waits for the fetched documents, at most
``LEAFLAB_SURVEY_INGEST_WAIT_S``, then asks the library for each one's best
passages for the plan's queries — a search narrowed to that document — so the
notes, the citation checks and the report's page links rest on the library's
passages, anywhere in the paper, not on the first pages. A document still being
ingested at the bound (or failed, or deleted meanwhile) keeps the first pages,
and the paper says so (``passages``: ``"library"`` or ``"first_pages"`` with
``passages_note``), which the report lists.
"""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import select

from services.common.contracts.statuses import DocumentStatus
from services.common.models import Document
from services.common.surveys import CHUNK_CHARS, CHUNKS_PER_PAPER
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import stage_key
from services.worker.tools.base import ToolError
from services.worker.tools.library_search import search_library

log = logging.getLogger(__name__)
POLL_S = 1.0
# Ingestion ends in one of these; any other status is still in flight.
SETTLED = ("ready", "failed")
LIBRARY, FIRST_PAGES = "library", "first_pages"


def read_from_library(
    ctx: SurveyContext, papers: list[dict[str, Any]], queries: list[str], wait_s: float
) -> None:
    """Replace the first-page passages of the fetched ``papers`` by the library's."""
    fetched = [p for p in papers if p.get("openalex_id") and p.get("document_id")]
    if not fetched:
        return
    statuses = wait_ingested(ctx, [p["document_id"] for p in fetched], wait_s)
    for paper in fetched:
        status = statuses.get(paper["document_id"])
        chunks: list[dict[str, Any]] = []
        if status == DocumentStatus.READY:
            chunks = _best_passages(ctx, paper["document_id"], queries)
        if chunks:
            paper.update(chunks=chunks, passages=LIBRARY)
            continue
        paper["passages"] = FIRST_PAGES
        paper["passages_note"] = _why_first_pages(status, wait_s)
        log.info("survey gather: %s read from its first pages: %s", paper["document_id"], status)


def wait_ingested(ctx: SurveyContext, document_ids: list[str], wait_s: float) -> dict[str, str]:
    """Each document's status once all are settled, or as they stand at the bound
    (a deleted document is absent)."""
    ids = [uuid.UUID(d) for d in document_ids]
    deadline = time.monotonic() + max(0.0, wait_s)
    while True:
        with ctx.deps.factory() as db:
            rows = db.execute(select(Document.id, Document.status).where(Document.id.in_(ids)))
            statuses = {str(doc_id): str(status) for doc_id, status in rows}
        settled = all(statuses.get(d) in SETTLED for d in document_ids)
        if settled or time.monotonic() >= deadline:
            return statuses
        time.sleep(POLL_S)


def _best_passages(
    ctx: SurveyContext, document_id: str, queries: list[str]
) -> list[dict[str, Any]]:
    """The document's best passages over the plan's queries, in query order, distinct."""
    tool_ctx = ctx.tool_context(call="survey-gather-passages", step_key=stage_key("gather"))

    def search(query: str) -> list[dict[str, Any]]:
        try:
            return search_library(
                tool_ctx, query, mode="mix", k=CHUNKS_PER_PAPER, documents=[document_id]
            )
        except ToolError as err:
            log.warning("survey gather: passages of %s not searched: %s", document_id, err)
            return []

    with ThreadPoolExecutor(max_workers=min(4, len(queries)) or 1) as pool:
        answers = list(pool.map(search, queries))
    chunks: dict[str, dict[str, Any]] = {}
    for hits in answers:
        for hit in hits:
            if hit.get("document_id") != document_id or not hit.get("text"):
                continue  # the library narrowed the search; a stray hit is not this paper's
            if hit.get("block") == "reference":
                continue  # its bibliography is not what the paper says
            locator = str(hit.get("locator") or f"p{hit.get('page')}")
            chunks.setdefault(
                locator,
                {
                    "locator": locator,
                    "page": hit.get("page"),
                    "section": hit.get("section"),
                    "text": str(hit["text"])[:CHUNK_CHARS],
                },
            )
    picked = list(chunks.values())[:CHUNKS_PER_PAPER]
    for index, chunk in enumerate(picked, start=1):
        chunk["chunk_id"] = f"c{index}"
    return picked


def _why_first_pages(status: str | None, wait_s: float) -> str:
    if status is None:
        return "the fetched document left the library before it was read"
    if status == DocumentStatus.FAILED:
        return "the library could not ingest the fetched PDF"
    if status == DocumentStatus.READY:
        return "the library found no passage of it for the survey's queries"
    return f"the library had not finished ingesting it within {wait_s:g} s"
