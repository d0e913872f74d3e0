"""BibTeX files, read with bibtexparser 2 (blocks, ``@string`` macros, comments,
``and``-separated names) and pylatexenc (accents and braces: ``M{\\"u}ller`` → Müller).

A block bibtexparser cannot parse (an unclosed brace, a duplicate key) becomes
:class:`Skipped` with bibtexparser's reason and line; the entries around it are
read as usual.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import bibtexparser
from bibtexparser import middlewares as mw
from bibtexparser.middlewares.names import NameParts
from bibtexparser.model import DuplicateBlockKeyBlock, ParsingFailedBlock
from bibtexparser.model import Entry as BibEntry
from pylatexenc.latex2text import LatexNodes2Text

from services.common.bibliography.entry import (
    Entry,
    ParsedBibliography,
    Skipped,
    clean_arxiv,
    clean_authors,
    clean_doi,
    clean_text,
    clean_year,
    make_entry,
    pdf_url,
)

FORMAT = "bibtex"
FILE_URL = re.compile(r"https?\\?://[^;\s]+?\.pdf", re.I)
VENUE_FIELDS = (
    "journal",
    "booktitle",
    "journaltitle",
    "school",
    "institution",
    "series",
    "howpublished",
    "publisher",
)
_LATEX = LatexNodes2Text(math_mode="text", strict_latex_spaces=False)
# bibtexparser logs every failed block itself; the summary carries the reason instead.
logging.getLogger("bibtexparser").setLevel(logging.ERROR)


def parse(text: str) -> ParsedBibliography:
    library = bibtexparser.parse_string(
        text,
        parse_stack=[
            mw.ResolveStringReferencesMiddleware(True),
            mw.RemoveEnclosingMiddleware(True),
            mw.SeparateCoAuthors(True),
            mw.SplitNameParts(True),
        ],
    )
    items: list[Entry | Skipped] = []
    for block in library.blocks:
        if isinstance(block, BibEntry):
            items.append(_entry(block))
        elif isinstance(block, DuplicateBlockKeyBlock):
            items.append(
                Skipped(f"duplicate key {block.key!r} (line {(block.start_line or 0) + 1})")
            )
        elif isinstance(block, ParsingFailedBlock):
            first = (block.raw or "").strip().split("\n", 1)[0][:80]
            reason = f"malformed entry at line {(block.start_line or 0) + 1} ({first!r})"
            items.append(Skipped(reason, _raw_key(block.raw or "")))
    return ParsedBibliography(FORMAT, items)


def _raw_key(raw: str) -> str | None:
    head = raw.partition("{")[2].partition(",")[0].strip()
    return head[:200] if head and " " not in head else None


def latex_text(value: Any) -> str | None:
    if not isinstance(value, str):
        return clean_text(value)
    try:
        decoded = _LATEX.latex_to_text(value)
    except Exception:  # pylatexenc refuses some malformed input: keep the raw text
        decoded = value
    return clean_text(decoded)


def _name(parts: Any) -> str:
    if isinstance(parts, NameParts):
        pieces = [*parts.first, *parts.von, *parts.last]
        name = " ".join(latex_text(p) or "" for p in pieces)
        if parts.jr:
            name += ", " + " ".join(latex_text(p) or "" for p in parts.jr)
        return name
    return latex_text(parts) or ""


def _entry(block: BibEntry) -> Entry | Skipped:
    fields = {f.key.lower(): f.value for f in block.fields}
    authors = fields.get("author") or fields.get("editor") or []
    if not isinstance(authors, list):
        authors = [authors]
    venue = next((latex_text(fields[f]) for f in VENUE_FIELDS if fields.get(f)), None)
    arxiv = None
    prefix = str(fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
    if prefix == "arxiv":
        arxiv = clean_arxiv(fields.get("eprint"))
    for source in ("arxiv", "eprint", "journal", "url", "doi", "note"):
        arxiv = arxiv or clean_arxiv(_arxiv_candidate(source, fields.get(source)))
    doi = clean_doi(fields.get("doi"))
    if doi and doi.startswith("10.48550/"):
        doi = None  # arXiv's own DOI names the preprint: it is the arXiv id above
    pdf = pdf_url(fields.get("url")) or pdf_url(fields.get("pdf")) or _file_url(fields.get("file"))
    return make_entry(
        title=latex_text(fields.get("title")),
        key=block.key,
        entry_type=block.entry_type.lower()[:30],
        authors=clean_authors([_name(a) for a in authors]),
        year=clean_year(fields.get("year")) or clean_year(fields.get("date")),
        venue=venue,
        doi=doi,
        arxiv_id=arxiv,
        pdf_url=pdf,
    )


def _arxiv_candidate(source: str, value: Any) -> str | None:
    """Only values that say arXiv: a bare ``eprint`` number is arXiv's only with its prefix."""
    if not isinstance(value, str):
        return None
    if source in ("arxiv",):
        return value
    return value if "arxiv" in value.lower() else None


def _file_url(value: Any) -> str | None:
    """Zotero's ``file`` field (``Title:path:mime``, ``;``-separated, ``\\:`` escaped)
    when one of its files is an http(s) URL; a local path is not fetchable."""
    found = FILE_URL.search(value) if isinstance(value, str) else None
    return pdf_url(found.group(0).replace("\\:", ":")) if found else None
