"""Gather's last step: open-access PDFs of the chosen OpenAlex papers, fetched with the
agent's own ``pdf_fetch`` tool (address guard, size cap, library intake) into the
project's library.

Each fetch is a ledger item step (``survey:gather:pdf:<openalex id>``) holding what
it got — the library document id and the first pages' text — or why it got
nothing, so a restarted gather never fetches the same paper twice. A fetched
paper is then a library document: its citations resolve to ``document_id`` and its
notes point at page passages of the PDF, not at the OpenAlex record line. The
document is queued for the library's ingestion like any upload, so later searches
of the library find it too.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from services.common.surveys import CHUNK_CHARS, CHUNKS_PER_PAPER
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import item_key
from services.worker.tools.base import ToolError
from services.worker.tools.library_intake import CeleryIngestQueue
from services.worker.tools.web.pdf import PdfFetchArgs, PdfFetchTool
from services.worker.tools.web.settings import ResearchToolSettings

log = logging.getLogger(__name__)
PAGE_MARK = re.compile(r"^\[page (\d+)\]\n", re.MULTILINE)


class SurveyFetchSettings(ResearchToolSettings):
    """Bounds of one survey's PDF fetching (env ``LEAFLAB_SURVEY_MAX_FETCHES`` …)."""

    # A survey is unattended: it may not pull an unbounded number of files.
    survey_max_fetches: int = 5
    survey_fetch_max_bytes: int = 20_000_000
    # How long gather waits for the library to ingest what it fetched before it
    # reads a paper from its first pages instead (library_passages.py).
    survey_ingest_wait_s: float = 180.0


def fetch_key(openalex_id: str) -> str:
    return item_key("gather", f"pdf:{openalex_id}")


def fetch_open_access(ctx: SurveyContext, papers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``papers`` with each fetched one turned into its library document.

    A fetched PDF the library already holds is that document again: the OpenAlex
    paper (metadata from OpenAlex, passages from the fetch step) stands for it and
    the library's entry goes, so a gather that runs again after the document was
    ingested — and found by the library search — gathers the same paper.
    """
    wanted = [p for p in papers if p.get("oa_url") and not p.get("document_id")]
    if not wanted:
        return papers
    settings = SurveyFetchSettings()
    fetched: dict[str, int] = {}  # document id → the paper that fetched it
    for paper in wanted[: max(0, settings.survey_max_fetches)]:
        outcome = _fetched(ctx, paper, settings)
        doc = outcome.get("document_id")
        if doc and outcome.get("chunks") and doc not in fetched:
            paper["document_id"] = doc
            paper["chunks"] = outcome["chunks"]
            fetched[doc] = id(paper)
    return [p for p in papers if fetched.get(p.get("document_id") or "", id(p)) == id(p)]


def _fetched(ctx: SurveyContext, paper: dict[str, Any], settings: SurveyFetchSettings) -> Any:
    """This paper's fetch step: read back when it ran before, else run and recorded."""
    key = fetch_key(paper["openalex_id"])
    done = ctx.result(key)
    if done is not None:
        return done
    cap = min(settings.pdf_fetch_max_bytes, settings.survey_fetch_max_bytes)
    capped = settings.model_copy(update={"pdf_fetch_max_bytes": cap})
    tool = PdfFetchTool(capped, ingest=CeleryIngestQueue(ctx.deps.celery))
    try:
        args = PdfFetchArgs(url=paper["oa_url"], add_to_library=True)
        answer = tool.run(args, ctx.tool_context(call=f"survey-{key}", step_key=key))
    except ValueError:  # OpenAlex's URL is no URL the tool takes
        outcome: dict[str, Any] = {"url": paper["oa_url"], "error": "invalid_url"}
    except ToolError as err:
        log.warning("survey gather: open-access PDF %s not fetched: %s", paper["oa_url"], err)
        if err.retryable:
            return {}  # not recorded: a later slice tries again
        outcome = {"url": paper["oa_url"], "error": err.code, "message": err.message}
    else:
        outcome = {
            "url": answer.data["url"],
            "document_id": answer.data["document_id"],
            "duplicate": answer.data["duplicate"],
            "bytes": answer.data["bytes"],
            "chunks": page_chunks(answer.content),
        }
    ctx.done(key, stage="gather", result=outcome)
    return outcome


def page_chunks(text: str) -> list[dict[str, Any]]:
    """The first pages of pdf_fetch's text (``[page N]`` markers) as a paper's passages."""
    parts = PAGE_MARK.split(text)
    chunks: list[dict[str, Any]] = []
    # split → [head, "1", page 1, "2", page 2, …]
    for number, body in zip(parts[1::2], parts[2::2], strict=False):
        body = body.strip()
        if not body:
            continue
        chunks.append(
            {
                "chunk_id": f"c{len(chunks) + 1}",
                "locator": f"p{number}",
                "page": int(number),
                "section": None,
                "text": body[:CHUNK_CHARS],
            }
        )
        if len(chunks) == CHUNKS_PER_PAPER:
            break
    return chunks
