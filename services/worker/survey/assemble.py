"""Stage assemble: report.md, report.tex, references.bib, papers.json, notes.json.

Only keys that survived verify are cited, so every ``[@key]`` in report.md has
its entry in references.bib and papers.json, with the locators its notes used.
"""

from __future__ import annotations

from typing import Any

from services.worker.survey.artifacts import as_json, store_artifacts
from services.worker.survey.context import SurveyContext
from services.worker.survey.keys import stage_key
from services.worker.survey.latex import render_bib, render_tex
from services.worker.survey.markdown import render_markdown


def cited_papers(
    sections: list[dict[str, Any]],
    papers: dict[str, dict[str, Any]],
    notes: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """papers.json: one entry per cited key, in key order."""
    keys = sorted({k for s in sections for p in s["paragraphs"] for k in p["keys"]})
    entries = []
    for key in keys:
        paper = papers[key]
        entry = {
            "key": key,
            "title": paper["title"],
            "authors": paper["authors"],
            "year": paper["year"],
            "locators": (notes.get(key) or {}).get("locators", []),
        }
        for optional in (
            "doi",
            "venue",
            "arxiv_id",
            "document_id",
            "openalex_id",
            "passages",
            "passages_note",
        ):
            if paper.get(optional):
                entry[optional] = paper[optional]
        entries.append(entry)
    return entries


def run_assemble(
    ctx: SurveyContext,
    plan: dict[str, Any],
    gathered: dict[str, Any],
    notes: dict[str, dict[str, Any]],
    sections: list[dict[str, Any]],
) -> dict[str, Any]:
    key = stage_key("assemble")
    done = ctx.result(key)
    if done is not None:
        return dict(done)
    ctx.report(stage="assemble")
    papers = gathered["papers"]
    cited = cited_papers(sections, papers, notes)
    files = {
        "report.md": render_markdown(
            topic=ctx.job.topic,
            plan=plan,
            sections=sections,
            papers=cited,
            unresolved_seeds=gathered["unresolved_seeds"],
        ),
        "report.tex": render_tex(
            topic=ctx.job.topic, plan=plan, sections=sections, cited=bool(cited)
        ),
        "references.bib": render_bib(cited),
        "papers.json": as_json(cited),
        "notes.json": as_json([notes[k] for k in sorted(notes)]),
    }
    if "tex" not in (ctx.job.input.get("formats") or ["md", "tex"]):
        del files["report.tex"], files["references.bib"]
    stored = store_artifacts(ctx, files)
    moved = sum(len(s["needs_checking"]) for s in sections)
    result = {
        "report": "report.md",
        "artifacts": stored,
        "papers_found": len(papers),
        "papers_cited": len(cited),
        "sections": len(sections),
        "needs_checking": moved,
    }
    ctx.done(key, stage="assemble", result=result)
    return result
