"""Stage read: one structured note per paper, in parallel, each its own ledger step.

A note says problem, method, assumptions, results and limitations, with
locators (document, section, page) that point at the passages it rests on; the
chunk a locator names is an ``enum`` of the passages shown, so it is always real.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.common.failpoints import failpoint
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import conversation, item_key, stage_key
from services.worker.survey.parallel import run_bounded
from services.worker.survey.plan import scope_lines
from services.worker.survey.schemas import note_schema
from services.worker.survey.structured import Ask

READ_PARALLELISM = 4
SYSTEM = (
    "You read one paper for a literature survey and take a structured note. Use only "
    "the passages shown; each locator names the passage (chunk_id) its evidence is from."
)


def note_prompt(paper: dict[str, Any], plan: dict[str, Any], job_input: dict[str, Any]) -> str:
    lines = [*scope_lines(job_input), "Research questions:"]
    lines += [f"- {q}" for q in plan["research_questions"]]
    lines += [f"Paper key: {paper['key']}", f"Title: {paper['title']}"]
    if paper.get("document_id"):
        lines.append(f"Library document_id: {paper['document_id']}")
    lines.append("Passages:")
    for chunk in paper["chunks"]:
        where = chunk.get("locator") or ""
        lines.append(f"[{chunk['chunk_id']}] ({where})\n{chunk['text']}")
    return "\n".join(lines)


def run_read(
    ctx: SurveyContext,
    plan: dict[str, Any],
    papers: dict[str, dict[str, Any]],
    should_stop: Callable[[], bool],
) -> dict[str, Any] | None:
    """All notes by key, or None when the slice ended before every paper was read."""
    key = stage_key("read")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    todo = [k for k in sorted(papers) if ctx.result(item_key("read", k)) is None]
    ctx.report(stage="read", papers_read=len(papers) - len(todo))

    def read_one(paper_key: str) -> None:
        paper = papers[paper_key]
        chunk_ids = [c["chunk_id"] for c in paper["chunks"]]
        ask = Ask(
            name="survey_note",
            schema=note_schema(paper_key, chunk_ids),
            system=SYSTEM,
            user=note_prompt(paper, plan, ctx.job.input),
            conversation_key=conversation(ctx.job.session_id, "read", paper_key),
        )
        data, spent = ctx.caller.ask(ask)
        ctx.done(item_key("read", paper_key), stage="read", result=_note(paper, data), spent=spent)
        failpoint("survey.after_note")
        ctx.bump("papers_read")

    finished = run_bounded(todo, read_one, limit=READ_PARALLELISM, should_stop=should_stop)
    if not finished:
        return None
    notes = {k: ctx.result(item_key("read", k)) for k in sorted(papers)}
    ctx.done(key, stage="read", result=notes)
    return notes


def _note(paper: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    chunks = {c["chunk_id"]: c for c in paper["chunks"]}
    locators = []
    for loc in data["locators"]:
        chunk = chunks[loc["chunk_id"]]
        locators.append(_locator(paper, chunk, str(loc["evidence"])))
    if not locators and paper["chunks"]:
        # A note without a locator could not be checked later: point at the first passage.
        locators.append(_locator(paper, paper["chunks"][0], ""))
    fields = ("problem", "method", "assumptions", "results", "limitations")
    return {
        "key": paper["key"],
        "title": paper["title"],
        **{name: str(data[name]) for name in fields},
        "locators": locators,
    }


def _locator(paper: dict[str, Any], chunk: dict[str, Any], evidence: str) -> dict[str, Any]:
    return {
        "chunk_id": chunk["chunk_id"],
        "document_id": paper.get("document_id"),
        "openalex_id": paper.get("openalex_id"),
        "section": chunk.get("section"),
        "page": chunk.get("page"),
        "locator": chunk.get("locator"),
        "evidence": evidence,
    }
