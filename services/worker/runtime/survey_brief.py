"""A survey job's opening message: the worker writes it from the job's structured input.

The API stores only ``{topic, years?, length?, seed_papers?}``; how a survey is
asked of the model is the agent's business. The brief is written once, as a
ledger step with its user message in one fenced statement, before the first
model call: a worker that dies after writing it leaves the message in the
history, and the next worker sees it there and does not write it again.
"""

from __future__ import annotations

from typing import Any

from services.common.failpoints import failpoint
from services.worker.runtime.deps import RuntimeDeps
from services.worker.runtime.lease import Lease
from services.worker.runtime.recorder import MessageWrite, StepWrite, record
from services.worker.runtime.state import TurnState
from services.worker.runtime.tool_exec import JobIdentity

BRIEF_KEY = "survey:brief"
LENGTH_WORDS = {"short": 800, "medium": 2000, "long": 5000}


def survey_prompt(job_input: dict[str, Any]) -> str:
    """The user message that asks the model for the survey."""
    lines = [
        f"Write a literature survey on: {job_input['topic']}",
        "Plan the survey with the todo tool, search the lab library for relevant papers, "
        "take structured notes in the workspace (notes.md), and write the report to "
        "survey.md with a references section. Cite only papers you actually found.",
        f"Target length: about {LENGTH_WORDS[job_input.get('length') or 'medium']} words.",
    ]
    if job_input.get("years"):
        lines.append(f"Focus on publication years {job_input['years']}.")
    if job_input.get("seed_papers"):
        lines.append("Start from these seed papers: " + "; ".join(job_input["seed_papers"]))
    return "\n".join(lines)


def ensure_brief(
    deps: RuntimeDeps,
    lease: Lease,
    who: JobIdentity,
    job_input: dict[str, Any],
    state: TurnState,
) -> None:
    """Append the brief as this job's first user message unless the job has one."""
    if any(m.job_id == who.job_id and m.role == "user" for m in state.history):
        return
    content = survey_prompt(job_input)
    step = StepWrite(
        key=BRIEF_KEY,
        kind="message",
        name="survey_brief",
        round_no=0,
        status="succeeded",
        arguments=job_input,
    )
    done = record(
        deps.writer,
        lease,
        session_id=who.session_id,
        step=step,
        message=MessageWrite(role="user", content=content),
    )
    failpoint("survey.after_brief")
    assert done.message is not None
    state.cancel_requested |= done.cancel_requested
    state.started(BRIEF_KEY, kind="message", name="survey_brief", round_no=0, status="succeeded")
    state.history.append(done.message)
