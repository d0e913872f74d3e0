"""report.md: sections with ``[@key]`` citations, "Needs checking", "Citation
checks" (per citation, which checks passed; which model wrote and which verified
the report), references.

Rendered from ledger data only, in a fixed order, so the same ledger always
gives the same bytes (a resumed survey's report equals an uninterrupted one's).
"""

from __future__ import annotations

from typing import Any

from services.worker.survey.citations import strip_citations


def cite(keys: list[str]) -> str:
    return "[" + "; ".join(f"@{k}" for k in keys) + "]" if keys else ""


def paragraph_text(para: dict[str, Any]) -> str:
    """The claim's prose with its citations written once, at its end."""
    body = strip_citations(para["text"])
    marks = cite(para["keys"])
    return f"{body} {marks}".strip()


def render_markdown(
    *,
    topic: str,
    plan: dict[str, Any],
    sections: list[dict[str, Any]],
    papers: list[dict[str, Any]],
    unresolved_seeds: list[str],
) -> str:
    out = [f"# {topic}", "", "## Research questions", ""]
    out += [f"- {q}" for q in plan["research_questions"]]
    out.append("")
    for section in sections:
        out += [f"## {section['title']}", ""]
        for para in section["paragraphs"]:
            out += [paragraph_text(para), ""]
    moved = [m for s in sections for m in s["needs_checking"]]
    if moved or unresolved_seeds:
        out += ["## Needs checking", ""]
        out.append("These claims were taken out of the report because verification failed.")
        out.append("")
        for item in moved:
            keys = ", ".join(f"`{k}`" for k in item["keys"]) or "none"
            out.append(
                f"- ({item['section']}) {strip_citations(item['text'])} — cited {keys}: "
                f"{item['reason']}"
            )
        for seed in unresolved_seeds:
            out.append(f"- seed paper `{seed}`: could not be validated (not cited)")
        out.append("")
    out += provenance(sections)
    out += ["## References", ""]
    for paper in papers:
        line = f"- **{paper['key']}**: {reference_line(paper)}"
        if paper.get("passages_note"):
            # Read from the fetched PDF's first pages, not the library's passages.
            line += f" (read from its first pages: {paper['passages_note']})"
        out.append(line)
    return "\n".join(out).rstrip() + "\n"


def reference_line(paper: dict[str, Any]) -> str:
    """The line "Authors. *Title*. Venue. Year. doi:…." — a part that is unknown is left out
    (never "Unknown authors"), and no part ends in a doubled period."""
    parts = []
    if paper.get("authors"):
        parts.append(", ".join(paper["authors"]))
    parts.append(f"*{paper['title']}*")
    if paper.get("venue"):
        parts.append(str(paper["venue"]))
    parts.append(str(paper["year"]) if paper.get("year") else "n.d.")
    if paper.get("arxiv_id"):
        parts.append(f"arXiv:{paper['arxiv_id']}")
    if paper.get("doi"):
        parts.append(f"doi:{paper['doi']}")
    if paper.get("document_id"):
        parts.append(f"library document {paper['document_id']}")
    if paper.get("openalex_id"):
        parts.append(f"OpenAlex {paper['openalex_id']}")
    return ". ".join(p.rstrip(".") for p in parts) + "."


CHECK_ORDER = ("resolves", "not_retracted", "lexical", "embedding", "numbers", "terms", "model")


def _passed(checks: dict[str, bool]) -> str:
    shown = [
        f"{n.replace('_', ' ')} {'✓' if checks[n] else '✗'}" for n in CHECK_ORDER if n in checks
    ]
    return ", ".join(shown) or "no check could run"


def _how(sections: list[dict[str, Any]]) -> str:
    supports = [
        item["support"]
        for s in sections
        for item in [*s["paragraphs"], *s["needs_checking"]]
        if item.get("support") and item["support"].get("mode") != "not checked"
    ]
    fallbacks = sorted({str(x["fallback"]) for x in supports if x.get("fallback")})
    if fallbacks:
        return (
            "lexical overlap, numbers and terms only — no embedding similarity, because "
            + "; ".join(fallbacks)
        )
    if any(x.get("mode") == "lexical-only" for x in supports):
        return "lexical overlap, numbers and terms only (no embedder was available)"
    return "lexical overlap, embedding similarity, numbers, terms"


def provenance(sections: list[dict[str, Any]]) -> list[str]:
    """Which model wrote and verified the report, and per citation which checks passed."""
    writers = sorted({m for s in sections for m in s.get("written_by", [])})
    checkers = sorted({m for s in sections for m in s.get("verified_by", [])})
    out = ["## Citation checks", ""]
    out.append(
        f"Written by {', '.join(writers) or 'an unrecorded model'}; verified by "
        f"{', '.join(checkers) or 'no model'} together with model-independent checks "
        f"({_how(sections)}): a claim is kept only when those support it, whatever "
        "the model says."
    )
    out.append("")
    for section in sections:
        kept = [(item, True) for item in section["paragraphs"]]
        for item, stays in [*kept, *((m, False) for m in section["needs_checking"])]:
            support = item.get("support")
            if not support:
                continue
            outcome = "cited" if stays else "needs checking"
            out.append(
                f'- ({section["title"]}) "{strip_citations(item["text"])[:80]}": {outcome}, '
                f"score {support['score']:.2f}"
            )
            for key, check in support["citations"].items():
                verdict = "supports it" if check["supported"] else "does not support it alone"
                if "resolves" in check["checks"]:
                    verdict = "not checked"
                why = (
                    f" ({check['reason']})"
                    if check.get("reason") and not check["supported"]
                    else ""
                )
                out.append(
                    f"  - `{key}`: {verdict}, score {check['score']:.2f}; "
                    f"{_passed(check['checks'])}{why}"
                )
    out.append("")
    return out
