"""Stage outline: the report's sections, each with the papers (keys) it draws on."""

from __future__ import annotations

from typing import Any

from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import conversation, stage_key
from services.worker.survey.plan import scope_lines
from services.worker.survey.schemas import outline_schema
from services.worker.survey.structured import Ask

SYSTEM = (
    "You outline a literature survey from paper notes. Each section lists the keys "
    "of the papers it discusses. Answer with a JSON object only."
)


def note_digest(note: dict[str, Any]) -> str:
    return (
        f"[{note['key']}] {note['title']}\n  problem: {note['problem']}\n"
        f"  method: {note['method']}\n  results: {note['results']}"
    )


def run_outline(
    ctx: SurveyContext, plan: dict[str, Any], notes: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    key = stage_key("outline")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    ctx.report(stage="outline")
    wanted = ctx.job.sections_wanted
    lines = [*scope_lines(ctx.job.input), "Research questions:"]
    lines += [f"- {q}" for q in plan["research_questions"]]
    lines += ["Paper notes:", *(note_digest(notes[k]) for k in sorted(notes))]
    lines.append(f"Propose {wanted} sections (not counting an introduction or references).")
    ask = Ask(
        name="survey_outline",
        schema=outline_schema(sorted(notes)),
        system=SYSTEM,
        user="\n".join(lines),
        conversation_key=conversation(ctx.job.session_id, "outline"),
    )
    data, spent = ctx.caller.ask(ask)
    sections = []
    for section in data["sections"][:wanted]:
        keys = list(dict.fromkeys(k for k in section["keys"] if k in notes))
        sections.append(
            {
                "title": str(section["title"]).strip() or "Section",
                "purpose": str(section["purpose"]),
                "keys": keys or sorted(notes),
            }
        )
    if not sections:
        sections = [{"title": "Overview", "purpose": ctx.job.topic, "keys": sorted(notes)}]
    result = {"sections": sections}
    ctx.done(key, stage="outline", result=result, spent=spent)
    ctx.report(sections_total=len(sections))
    return result
