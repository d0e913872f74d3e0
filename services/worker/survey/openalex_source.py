"""Papers from OpenAlex for the gather stage: seed DOIs, and a topic search when the
library holds too few papers. Both go through the paper tools' OpenAlex client
(services/worker/tools/papers), so the same address guard and recorded answers
apply; a retracted work is never taken. Such a paper has no library passages:
its OpenAlex record line is the one passage a note can point at.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from services.worker.survey.context import SurveyContext
from services.worker.tools.base import ToolError
from services.worker.tools.papers.openalex import OpenAlex, Work, normalise_doi, normalise_title
from services.worker.tools.web.settings import ResearchToolSettings

log = logging.getLogger(__name__)
ISSN_RE = re.compile(r"^\d{4}-\d{3}[\dXx]$")
SEED_SCORE = 1e6  # seeds were asked for by name: they rank first


@dataclass(frozen=True)
class Venues:
    """The survey's ``venues``. ISSNs go to OpenAlex as a filter. OpenAlex cannot filter
    works by a venue's name, so for names the topic search is matched against each
    found work's venue (normalised, one containing the other; "NeurIPS" does not
    match "Neural Information Processing Systems": give its ISSN or full name)."""

    issns: list[str]
    names: list[str]

    @classmethod
    def of(cls, given: list[str]) -> Venues:
        issns = [v.strip().upper() for v in given if ISSN_RE.match(v.strip())]
        names = [normalise_title(v) for v in given if not ISSN_RE.match(v.strip())]
        return cls(issns, [n for n in names if n])

    def named(self, work: Work) -> bool:
        venue = normalise_title(work.venue or "")
        return bool(venue) and any(name in venue or venue in name for name in self.names)


def as_paper(work: Work, *, score: float) -> dict[str, Any]:
    return {
        "title": work.title,
        "authors": list(work.authors),
        "year": work.year,
        "doi": work.doi,
        "venue": work.venue,
        "arxiv_id": None,
        "document_id": None,
        "openalex_id": work.openalex_id,
        "filename": None,
        "oa_url": work.oa_url,  # gather fetches it into the library (oa_fetch.py)
        "score": score,
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


def add_seeds(ctx: SurveyContext, papers: list[dict[str, Any]]) -> list[str]:
    """Seed DOIs not already among ``papers`` looked up in OpenAlex and appended; the
    ones that cannot be validated are returned (the report lists them, never cites them)."""
    given = list(ctx.job.input.get("seed_papers") or [])
    have = {p["doi"] for p in papers if p.get("doi")}
    unresolved = [s for s in given if normalise_doi(s) is None]
    wanted = [d for d in (normalise_doi(s) for s in given) if d and d not in have]
    if not wanted:
        return unresolved
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
        papers.append(as_paper(work, score=SEED_SCORE))
    return unresolved


def search_ahead(ctx: SurveyContext) -> Callable[[], list[Work]]:
    """Start the topic search now; the returned function waits for its works.

    It needs only the topic, so the runner asks it during the plan's model call (a
    resumed gather at its start, beside the library searches): a thin library costs
    no extra wait. Whether its works are taken is decided only after the library
    answered (the library comes first); when they are not, one search was spent.
    A failed search gives no works; the thread is not waited for when its works are
    not wanted.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="survey-openalex")
    context = contextvars.copy_context()  # the search joins the job's trace
    future = pool.submit(context.run, _topic_works, ctx, ctx.job.papers_wanted)
    pool.shutdown(wait=False)

    def works() -> list[Work]:
        try:
            return future.result()
        except ToolError as err:
            log.warning("survey gather: OpenAlex search failed: %s", err)
            return []

    return works


def search_openalex(
    ctx: SurveyContext, papers: list[dict[str, Any]], works: list[Work], *, limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit`` of the topic search's ``works`` that are not among ``papers``."""
    seen_dois = {p["doi"] for p in papers if p.get("doi")}
    seen_titles = {normalise_title(p["title"]) for p in papers}
    found = []
    for rank, work in enumerate(works):
        if work.is_retracted or (work.doi and work.doi in seen_dois):
            continue
        if not ctx.job.in_years(work.year):
            continue
        if normalise_title(work.title) in seen_titles:
            continue
        seen_titles.add(normalise_title(work.title))
        # Below every library paper: the library is the lab's own choice.
        found.append(as_paper(work, score=-1.0 - rank))
        if len(found) == limit:
            break
    return found


def _topic_works(ctx: SurveyContext, limit: int) -> list[Work]:
    """The topic search, narrowed to the survey's venues when it names any: the works of
    its ISSNs (filtered by OpenAlex) first, then those whose venue has one of its names."""
    first, _, last = (ctx.job.input.get("years") or "").partition("-")
    venues = Venues.of(ctx.job.input.get("venues") or [])
    openalex = OpenAlex(ResearchToolSettings())

    def search(size: int, issns: list[str]) -> list[Work]:
        return openalex.search(
            ctx.job.topic,
            limit=size,
            year_from=int(first) if first else None,
            year_to=int(last or first) if first else None,
            issns=issns,
        )

    if not venues.issns and not venues.names:
        return search(min(25, limit + 5), [])
    works = search(min(25, limit + 5), venues.issns) if venues.issns else []
    if venues.names:
        # Matched after the search: ask for more, so that enough are left.
        works += [w for w in search(min(50, limit * 4 + 5), []) if venues.named(w)]
    return works
