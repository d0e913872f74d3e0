"""The opening message of a survey job, built from its structured input."""

from __future__ import annotations

from typing import Any

LENGTH_WORDS = {"short": 800, "medium": 2000, "long": 5000}


def survey_prompt(job_input: dict[str, Any]) -> str:
    lines = [
        f"Write a literature survey on: {job_input['topic']}",
        "Plan the survey with the todo tool, search the lab library for relevant papers, "
        "take structured notes in the workspace (notes.md), and write the report to "
        "survey.md with a references section. Cite only papers you actually found.",
        f"Target length: about {LENGTH_WORDS[job_input.get('length', 'medium')]} words.",
    ]
    if job_input.get("years"):
        lines.append(f"Focus on publication years {job_input['years']}.")
    if job_input.get("seed_papers"):
        lines.append("Start from these seed papers: " + "; ".join(job_input["seed_papers"]))
    return "\n".join(lines)
