"""Better BibTeX JSON (Zotero's "Better BibTeX JSON" export): ``{"config", "items",
"collections"}`` with Zotero item fields — ``itemType``, ``title``, ``creators``
(``firstName``/``lastName`` or ``name``), ``date``, ``publicationTitle`` /
``proceedingsTitle``, ``DOI``, ``url``, ``extra`` (``arXiv: …``), ``citationKey``
and ``attachments``.

Notes and attachments exported as items of their own are left out (they are not
papers); an item without a title is :class:`Skipped`.
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

FORMAT = "better-bibtex-json"
NOT_PAPERS = frozenset({"note", "attachment", "annotation"})
VENUES = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle", "repository")


def looks_like(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("items"), list)
        and any(isinstance(i, dict) and "itemType" in i for i in data["items"])
    )


def parse(data: dict[str, Any]) -> ParsedBibliography:
    items: list[Entry | Skipped] = []
    for n, item in enumerate(data["items"]):
        if isinstance(item, dict) and item.get("itemType") in NOT_PAPERS:
            continue
        items.append(_item(n, item))
    return ParsedBibliography(FORMAT, items)


def _name(creator: Any) -> str:
    if not isinstance(creator, dict):
        return ""
    if creator.get("name"):
        return str(creator["name"])
    return " ".join(str(p) for p in (creator.get("firstName"), creator.get("lastName")) if p)


def _item(n: int, item: Any) -> Entry | Skipped:
    if not isinstance(item, dict):
        return Skipped(f"item {n + 1} is not an object")
    creators = [c for c in item.get("creators") or [] if isinstance(c, dict)]
    authors = [c for c in creators if c.get("creatorType", "author") == "author"] or creators
    arxiv = None
    for value in (item.get("archiveID"), item.get("extra"), item.get("url"), item.get("DOI")):
        if isinstance(value, str) and "arxiv" in value.lower():
            arxiv = arxiv or clean_arxiv(value)
    doi = clean_doi(item.get("DOI"))
    if doi and doi.startswith("10.48550/"):
        doi = None
    attached = [
        pdf_url(a.get("url"))
        for a in item.get("attachments") or []
        if isinstance(a, dict) and a.get("contentType", "application/pdf") == "application/pdf"
    ]
    return make_entry(
        title=item.get("title"),
        key=item.get("citationKey") or item.get("citekey") or item.get("key"),
        entry_type=clean_text(item.get("itemType"), 30) or "misc",
        authors=clean_authors([_name(c) for c in authors]),
        year=clean_year(item.get("date")),
        venue=next((clean_text(item[v], 500) for v in VENUES if item.get(v)), None),
        doi=doi,
        arxiv_id=arxiv,
        pdf_url=pdf_url(item.get("url")) or next((u for u in attached if u), None),
    )
