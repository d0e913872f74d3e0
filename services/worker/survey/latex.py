"""report.tex + references.bib that compile with pdflatex + bibtex.

Text is reduced to ASCII and LaTeX-escaped: model prose and PDF titles carry
characters (ligatures, ``%``, ``_``, ``&``) that would otherwise break the build.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from services.worker.survey.citations import strip_citations

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def escape(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    plain = " ".join(plain.split())
    return "".join(_SPECIAL.get(ch, ch) for ch in plain)


def render_tex(
    *, topic: str, plan: dict[str, Any], sections: list[dict[str, Any]], cited: bool
) -> str:
    out = [
        r"\documentclass[11pt]{article}",
        r"\usepackage[T1]{fontenc}",
        r"\begin{document}",
        r"\title{" + escape(topic) + "}",
        r"\author{Leaflab survey}",
        r"\date{}",
        r"\maketitle",
        r"\section*{Research questions}",
        r"\begin{itemize}",
    ]
    out += [r"\item " + escape(q) for q in plan["research_questions"]] or [r"\item (none)"]
    out.append(r"\end{itemize}")
    for section in sections:
        out.append(r"\section{" + escape(section["title"]) + "}")
        for para in section["paragraphs"]:
            text = escape(strip_citations(para["text"]))
            if para["keys"]:
                text += r"~\cite{" + ",".join(para["keys"]) + "}"
            out += [text, ""]
    moved = [m for s in sections for m in s["needs_checking"]]
    if moved:
        out += [r"\section*{Needs checking}", r"\begin{itemize}"]
        for item in moved:
            out.append(
                r"\item "
                + escape(f"({item['section']}) {strip_citations(item['text'])} -- {item['reason']}")
            )
        out.append(r"\end{itemize}")
    if cited:
        out += [r"\bibliographystyle{plain}", r"\bibliography{references}"]
    out.append(r"\end{document}")
    return "\n".join(out) + "\n"


def render_bib(papers: list[dict[str, Any]]) -> str:
    entries = []
    for paper in papers:
        fields = {
            "title": "{" + escape(paper["title"]) + "}",
            "author": " and ".join(escape(a) for a in paper["authors"]) or "{Unknown}",
            "year": str(paper["year"]) if paper["year"] else "",
            "doi": escape(paper.get("doi") or ""),
            "note": escape(_note(paper)),
        }
        body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items() if v)
        entries.append(f"@misc{{{_bib_key(paper['key'])},\n{body}\n}}")
    return "\n\n".join(entries) + "\n"


def _note(paper: dict[str, Any]) -> str:
    if paper.get("document_id"):
        return f"Leaflab library document {paper['document_id']}"
    return f"OpenAlex {paper.get('openalex_id')}"


def _bib_key(key: str) -> str:
    # Keys are made of [A-Za-z0-9_:-] already; BibTeX takes those as they are.
    return re.sub(r"[^A-Za-z0-9_:-]", "", key)
