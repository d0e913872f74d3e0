"""Stage plan: research questions and search queries from the survey's input."""

from __future__ import annotations

from typing import Any

from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import conversation, stage_key
from services.worker.survey.schemas import plan_schema
from services.worker.survey.structured import Ask

MAX_QUERIES = 6
SYSTEM = (
    "You plan literature surveys. Answer with a JSON object only: the research "
    "questions the survey should answer and short search queries for a paper library."
)


def scope_lines(job_input: dict[str, Any]) -> list[str]:
    """The survey's scope as lines every stage's prompt repeats."""
    lines = [f"Survey topic: {job_input['topic']}"]
    if job_input.get("years"):
        lines.append(f"Publication years: {job_input['years']}")
    if job_input.get("venues"):
        lines.append("Venues: " + ", ".join(job_input["venues"]))
    if job_input.get("seed_papers"):
        lines.append("Seed papers: " + "; ".join(job_input["seed_papers"]))
    return lines


def run_plan(ctx: SurveyContext) -> dict[str, Any]:
    key = stage_key("plan")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    ctx.report(stage="plan")
    ask = Ask(
        name="survey_plan",
        schema=plan_schema(),
        system=SYSTEM,
        user="\n".join(
            [*scope_lines(ctx.job.input), "Give 3-5 research questions and 3-6 search queries."]
        ),
        conversation_key=conversation(ctx.job.session_id, "plan"),
    )
    data, spent = ctx.caller.ask(ask)
    queries = [ctx.job.topic]
    for query in data["search_queries"]:
        text = " ".join(str(query).split())[:300]
        if text and text.lower() not in {q.lower() for q in queries}:
            queries.append(text)
    result = {
        "research_questions": [str(q) for q in data["research_questions"]][:8],
        "search_queries": queries[:MAX_QUERIES],
    }
    ctx.done(key, stage="plan", result=result, spent=spent)
    return result
