"""Metadata of one PDF, read inside the parsing child: ``extract_metadata(doc, first_page)``.

Sources, in order of trust per field:
- title: the PDF's own ``title`` (source "pdf") when it is a real title, else
  the largest font block at the top of page 1 ("layout") — the title itself is
  chosen by ``pdf_structure._title``; here only its source is recorded;
- authors: the PDF's ``author`` field ("pdf"), else the lines under the title
  before the abstract ("layout");
- doi, arxiv_id, pmid, venue: page 1's raw text ("text"; raw, because the arXiv
  side stamp is removed from the blocks as page furniture);
- year: the venue line's year, else the arXiv id's yymm ("text"), else the PDF's
  creation date ("pdf");
- abstract: the block(s) after an "Abstract" heading ("layout").
Every value is bounded in size: a hostile PDF cannot make the row large.
"""

from __future__ import annotations

import re
from typing import Any

from services.library.metadata.authors import names_from_field, names_from_words
from services.library.metadata.identifiers import (
    arxiv_year,
    find_arxiv,
    find_doi,
    find_pmid,
    find_year,
    pdf_year,
)

ABSTRACT = re.compile(r"^\s*abstract\b[\s.:—-]*", re.I)
VENUE = re.compile(
    r"((?:In\s+)?Proceedings of [^\n]{5,200}|Published as a conference paper at [^\n]{3,60}|"
    r"(?:CHI|CSCW|UIST|IUI|KDD|WWW|SIGIR|JCDL|EMNLP|NAACL|ACL|NeurIPS|ICML|ICLR)\s+['’]\d{2}[^\n]{0,80})"
)
MAX_ABSTRACT = 4000
ABOUT_TITLE = re.compile(r"untitled|\.(tex|dvi|docx?)$", re.I)


def _title_source(meta: dict[str, Any]) -> str:
    title = (meta.get("title") or "").strip()
    return "pdf" if len(title) > 8 and not ABOUT_TITLE.search(title) else "layout"


def _title_block(first_page: list[Any]) -> Any | None:
    # Titles start in the top 30 % of page 1; below it a figure's large label
    # ("Paper Search" on PaSa's page 1) would win on size alone.
    candidates = [
        b
        for b in first_page
        if 8 <= len(b.text) <= 300
        and b.y0 < b.page_height * 0.3
        and not b.text.lower().startswith(("arxiv:", "table", "figure", "fig."))
        and _texty(b)
    ]
    if not candidates:
        return None
    top = max(candidates, key=lambda b: b.size)
    # A title is set larger than the page's text; a page of tables has none.
    sizes = sorted(b.size for b in first_page)
    return top if top.size >= sizes[len(sizes) // 2] * 1.15 else None


def _title_lines(first_page: list[Any]) -> list[Any]:
    """The title block and its neighbours set in (nearly) the same size: a title on 2–3 lines."""
    top = _title_block(first_page)
    if top is None:
        return []
    start = end = first_page.index(top)
    while start > 0 and _same_title(first_page[start - 1], first_page[start]):
        start -= 1
    while end + 1 < len(first_page) and end - start < 3:
        if not _same_title(first_page[end], first_page[end + 1]):
            break
        end += 1
    return first_page[start : end + 1]


def _texty(block: Any) -> bool:
    """Not a table's row: titles carry few digits."""
    return sum(map(str.isdigit, block.text)) < len(block.text) * 0.1


def _same_title(upper: Any, lower: Any) -> bool:
    return (
        _texty(upper)
        and _texty(lower)
        and abs(upper.size - lower.size) <= 1.0
        and -upper.size <= lower.y0 - upper.y1 <= upper.size * 1.5
    )


def layout_title(first_page: list[Any]) -> str | None:
    lines = _title_lines(first_page)
    title = " ".join(" ".join(b.text.split()) for b in lines)
    return title if 8 <= len(title) <= 400 else None


def _abstract_top(first_page: list[Any]) -> float | None:
    tops = [b.y0 for b in first_page if ABSTRACT.match(b.text) and b.x0 < 320]
    return min(tops) if tops else None


def _abstract(first_page: list[Any]) -> str | None:
    for index, block in enumerate(first_page):
        if not ABSTRACT.match(block.text):
            continue
        rest = ABSTRACT.sub("", block.text, count=1).strip()
        if len(rest) > 80:
            return rest[:MAX_ABSTRACT]
        following = first_page[index + 1 : index + 4]
        parts = [b.text for b in following if len(b.text) > 40 and b.size <= block.size]
        text = " ".join(parts[:2]).strip()
        return text[:MAX_ABSTRACT] or None
    return None


def _layout_authors(page: Any, first_page: list[Any]) -> list[str]:
    """Names in the band between the title's bottom and the abstract (or 220 pt below)."""
    title = _title_lines(first_page)
    if not title:
        return []
    bottom = max(b.y1 for b in title)  # under a title's last line
    end = _abstract_top(first_page) or bottom + 220
    lines: dict[tuple[int, int], list[tuple[float, float, float, str]]] = {}
    for x0, y0, x1, y1, word, block, line, _ in page.get_text("words"):
        if bottom - 1 <= y0 and y1 <= end + 1 and x0 > 20:  # x0 > 20: not the side stamp
            lines.setdefault((block, line), []).append((x0, x1, y1 - y0, word))
    return names_from_words(lines[k] for k in sorted(lines))


def extract_metadata(doc: Any, first_page: list[Any]) -> dict[str, Any]:
    """``{title?, authors, year, venue, doi, arxiv_id, pmid, abstract, source}``

    ``source`` maps each field found to where it came from."""
    meta = doc.metadata or {}
    page = doc[0]
    raw = page.get_text()[:20000]
    out: dict[str, Any] = {"source": {"title": _title_source(meta)}}
    title = layout_title(first_page) if out["source"]["title"] == "layout" else None
    if title:
        out["title"] = title

    authors = names_from_field(meta.get("author"))
    if authors:
        out["authors"], out["source"]["authors"] = authors, "pdf"
    else:
        authors = _layout_authors(page, first_page)
        if authors:
            out["authors"], out["source"]["authors"] = authors, "layout"

    for field, value in (("doi", find_doi(raw)), ("arxiv_id", find_arxiv(raw))):
        if value:
            out[field], out["source"][field] = value[:200], "text"
    pmid = find_pmid(raw)
    if pmid:
        out["pmid"], out["source"]["pmid"] = pmid, "text"

    venue_match = VENUE.search(raw)
    venue_year = None
    if venue_match:
        venue = re.split(r",\s*pages?\b|,\s*\d{1,4}\s*[–-]", venue_match.group(1))[0]
        venue = re.sub(r"^In\s+", "", venue).strip(" .,")
        out["venue"], out["source"]["venue"] = venue[:300], "text"
        venue_year = find_year(
            venue_match.group(0) + raw[venue_match.end() : venue_match.end() + 80]
        )

    if venue_year:
        out["year"], out["source"]["year"] = venue_year, "text"
    elif out.get("arxiv_id") and arxiv_year(out["arxiv_id"]):
        out["year"], out["source"]["year"] = arxiv_year(out["arxiv_id"]), "text"
    elif pdf_year(meta.get("creationDate")):
        out["year"], out["source"]["year"] = pdf_year(meta.get("creationDate")), "pdf"

    abstract = _abstract(first_page)
    if abstract:
        out["abstract"], out["source"]["abstract"] = abstract, "layout"
    return out
