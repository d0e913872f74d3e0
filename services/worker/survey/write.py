"""Stage write: each section from the notes of its papers, in parallel, one step each.

Paragraphs cite with ``[@key]``. Keys are not forced to the papers in hand here
(the schema's enum is advisory to this check): a key that names nothing is the
verify stage's to catch, so it is reported instead of silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.worker.survey.citations import keys_in
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import conversation, item_key, stage_key
from services.worker.survey.parallel import run_bounded
from services.worker.survey.plan import scope_lines
from services.worker.survey.schemas import section_schema
from services.worker.survey.structured import Ask

WRITE_PARALLELISM = 4
SYSTEM = (
    "You write one section of a literature survey from paper notes. Cite every claim "
    "with the paper's key as [@key] and list the keys a paragraph cites in its keys."
)


def section_prompt(
    ctx: SurveyContext, section: dict[str, Any], notes: dict[str, dict[str, Any]]
) -> str:
    words = ctx.job.shape.words_per_section
    lines = [*scope_lines(ctx.job.input), f"Section: {section['title']}"]
    lines += [f"Purpose: {section['purpose']}", f"About {words} words.", "Notes:"]
    for key in section["keys"]:
        note = notes[key]
        lines.append(
            f"[@{key}] {note['title']}\n  problem: {note['problem']}\n  method: "
            f"{note['method']}\n  assumptions: {note['assumptions']}\n  results: "
            f"{note['results']}\n  limitations: {note['limitations']}"
        )
    return "\n".join(lines)


def run_write(
    ctx: SurveyContext,
    outline: dict[str, Any],
    notes: dict[str, dict[str, Any]],
    should_stop: Callable[[], bool],
) -> list[dict[str, Any]] | None:
    """Every section's paragraphs, or None when the slice ended first."""
    key = stage_key("write")
    done = ctx.result(key)
    if done is not None:
        return list(done["sections"])
    sections = outline["sections"]
    todo = [i for i in range(len(sections)) if ctx.result(item_key("write", str(i))) is None]
    ctx.report(stage="write", sections_written=len(sections) - len(todo))

    def write_one(index: int) -> None:
        section = sections[index]
        ask = Ask(
            name="survey_section",
            schema=section_schema(sorted(notes)),
            system=SYSTEM,
            user=section_prompt(ctx, section, notes),
            conversation_key=conversation(ctx.job.session_id, "write", str(index)),
            lenient_enums=True,
        )
        data, spent = ctx.caller.ask(ask)
        paragraphs = []
        for para in data["paragraphs"]:
            text = str(para["text"]).strip()
            cited = list(dict.fromkeys([*(str(k) for k in para["keys"]), *keys_in(text)]))
            if text:
                paragraphs.append({"text": text, "keys": cited})
        result = {
            "title": section["title"],
            "paragraphs": paragraphs,
            "written_by": sorted(set(spent.models)),
        }
        ctx.done(item_key("write", str(index)), stage="write", result=result, spent=spent)
        ctx.bump("sections_written")

    if not run_bounded(todo, write_one, limit=WRITE_PARALLELISM, should_stop=should_stop):
        return None
    written: list[dict[str, Any]] = [
        ctx.result(item_key("write", str(i))) for i in range(len(sections))
    ]
    ctx.done(key, stage="write", result={"sections": written})
    return written
