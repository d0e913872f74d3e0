"""CSL-JSON (Zotero's "CSL JSON" export, citeproc-js input): a list of items with
``type``, ``title``, ``author`` (``family``/``given`` or ``literal``), ``issued``
(``date-parts`` or ``raw``), ``container-title``, ``DOI``, ``URL``, ``number``.

An item that is not an object, or has no title, is :class:`Skipped` with why.
"""

from __future__ import annotations

from typing import Any

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

FORMAT = "csl-json"


def looks_like(data: Any) -> bool:
    items = data.get("items") if isinstance(data, dict) else data
    return (
        isinstance(items, list)
        and bool(items)
        and any(isinstance(i, dict) and "type" in i and "itemType" not in i for i in items)
    )


def parse(data: Any) -> ParsedBibliography:
    items = data.get("items") if isinstance(data, dict) else data
    return ParsedBibliography(FORMAT, [_item(n, item) for n, item in enumerate(items or [])])


def _name(person: Any) -> str:
    if not isinstance(person, dict):
        return ""
    if person.get("literal"):
        return str(person["literal"])
    parts = [person.get("given"), person.get("non-dropping-particle"), person.get("family")]
    name = " ".join(str(p) for p in parts if p)
    return f"{name}, {person['suffix']}" if person.get("suffix") else name


def _year(issued: Any) -> int | None:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            return clean_year(parts[0][0]) or clean_year(str(parts[0][0]))
        return clean_year(issued.get("raw")) or clean_year(issued.get("literal"))
    return clean_year(issued)


def _item(n: int, item: Any) -> Entry | Skipped:
    if not isinstance(item, dict):
        return Skipped(f"item {n + 1} is not an object")
    key = item.get("citation-key") or item.get("citationKey") or item.get("id")
    if isinstance(key, str) and "/" in key:
        key = key.rstrip("/").rsplit("/", 1)[-1]  # Zotero's item URI: its item key
    arxiv = None
    for value in (item.get("number"), item.get("URL"), item.get("DOI"), item.get("note")):
        if isinstance(value, str) and "arxiv" in value.lower():
            arxiv = arxiv or clean_arxiv(value)
    doi = clean_doi(item.get("DOI"))
    if doi and doi.startswith("10.48550/"):
        doi = None
    authors = item.get("author") or item.get("editor") or []
    return make_entry(
        title=item.get("title"),
        key=key if isinstance(key, str | int) else None,
        entry_type=clean_text(item.get("type"), 30) or "misc",
        authors=clean_authors([_name(a) for a in authors] if isinstance(authors, list) else []),
        year=_year(item.get("issued")),
        venue=clean_text(item.get("container-title") or item.get("publisher"), 500),
        doi=doi,
        arxiv_id=arxiv,
        pdf_url=pdf_url(item.get("URL")),
    )
