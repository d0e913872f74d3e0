"""BibTeX entries from what the library knows of a paper: one writer for the
survey's ``references.bib`` and a library collection's export.

Text is reduced to ASCII and LaTeX-escaped: model prose and PDF titles carry
characters (ligatures, ``%``, ``_``, ``&``) that would otherwise break the build.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

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


def render_bib(papers: list[dict[str, Any]]) -> str:
    """One full entry per paper: author, title, year, and booktitle (a proceedings),
    journal (another venue) or eprint + archivePrefix (an arXiv preprint), doi."""
    entries = []
    for paper in papers:
        kind, fields = bib_fields(paper)
        body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items() if v)
        entries.append(f"@{kind}{{{_bib_key(paper['key'])},\n{body}\n}}")
    return "\n\n".join(entries) + "\n"


PROCEEDINGS = re.compile(r"proceedings|conference|workshop|symposium|meeting", re.I)


def bib_fields(paper: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The entry type and its fields (empty ones are left out of the entry)."""
    venue = escape(paper.get("venue") or "")
    arxiv = escape(paper.get("arxiv_id") or "")
    fields = {
        "author": " and ".join(escape(a) for a in paper.get("authors") or []),
        "title": "{" + escape(paper["title"]) + "}",
        "year": str(paper["year"]) if paper.get("year") else "",
    }
    kind = "misc"
    if venue and PROCEEDINGS.search(venue):
        kind, fields["booktitle"] = "inproceedings", venue
    elif venue:
        kind, fields["journal"] = "article", venue
    if arxiv:
        fields["eprint"], fields["archivePrefix"] = arxiv, "arXiv"
    fields["doi"] = escape(paper.get("doi") or "")
    fields["note"] = escape(_note(paper))
    return kind, fields


def _note(paper: dict[str, Any]) -> str:
    if paper.get("note"):
        return str(paper["note"])
    if paper.get("document_id"):
        return f"Leaflab library document {paper['document_id']}"
    return f"OpenAlex {paper.get('openalex_id')}"


def _bib_key(key: str) -> str:
    # Keys are made of [A-Za-z0-9_:-] already; BibTeX takes those as they are.
    return re.sub(r"[^A-Za-z0-9_:-]", "", key)
