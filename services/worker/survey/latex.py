"""report.tex + references.bib that compile with pdflatex + bibtex (the entries are
written by services/common/bibliography/writer.py, shared with the library's export).

Text is reduced to ASCII and LaTeX-escaped: model prose and PDF titles carry
characters (ligatures, ``%``, ``_``, ``&``) that would otherwise break the build.
"""

from __future__ import annotations

from typing import Any

from services.common.bibliography.writer import escape, render_bib
from services.worker.survey.citations import strip_citations

__all__ = ["escape", "render_bib", "render_tex"]  # the writer's names, as the survey used them


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
