"""A document's reference list: structured entries, linked to library documents.

Guarantees:
- Each entry keeps its raw text; title, authors, year and DOI are filled when
  the entry's shape allows (numbered, author-year and "Surname, I.;" styles).
- An entry links to a document of the same collection (never another one: a
  link must not reveal what a collection holds) by DOI, else by the cited
  document's normalised title appearing in the entry's normalised text.
- Links are made whichever paper arrives first: ``record_references`` links
  the new document's entries to documents already there (not failed), and
  earlier documents' unlinked entries to the new document. It is called once
  the document's title and DOI are stored, before it is ready; recorders of
  one collection take turns (an advisory lock), so two papers ingested at
  once still see each other.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, literal, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import DocumentStatus
from services.common.db import transaction
from services.common.models import Document, DocumentReference

DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)
MARKER = re.compile(r"^\s*(?:\[\d{1,3}\]|\(\d{1,3}\)|\d{1,3}\.)\s*")
YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)[a-z]?\b")
# "Authors. 2020. Title. Venue" (ACL, ACM): the year sits between two sentences.
AUTHOR_YEAR = re.compile(r"^(?P<authors>.+?)\.\s+(?P<year>(?:19|20)\d{2})[a-z]?\.\s+(?P<rest>.+)$")
# A sentence end that is not an initial ("Matthew E. Peters") nor "et al.".
SENTENCE = re.compile(
    r"(?<![\s.\-][A-Z])(?<!^[A-Z])(?<!\bal)\.\s+(?=[A-Z0-9“\"'(]|arXiv|In\s|bioRxiv)"
)
MIN_TITLE_CHARS = 15  # shorter titles ("Introduction") would link to anything


def normalise(text: str) -> str:
    """Lower-case letters and digits separated by single spaces (accents and ligatures folded)."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    # Words hyphenated at a line end in the PDF are joined before matching.
    return " ".join(re.sub(r"[^a-z0-9]+", " ", folded.replace("-", "")).split())


@dataclass
class ReferenceEntry:
    text: str
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    doi: str | None = None


def _authors(text: str) -> list[str]:
    text = re.sub(r"(?<!\b[A-Z])\.$", "", text.strip())  # keep an initial's period
    if ";" in text:
        parts = text.split(";")
    else:
        parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    return [p.strip() for p in parts if p.strip() and p.strip() != "et al"][:50]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(text) if s.strip()]


def parse_reference(raw: str) -> ReferenceEntry:
    """Structured fields of one reference entry, as far as its shape tells."""
    text = MARKER.sub("", raw).strip()
    entry = ReferenceEntry(text=raw.strip())
    doi = DOI.search(text)
    if doi:
        entry.doi = doi.group(1).rstrip(".,;)").lower()
    m = AUTHOR_YEAR.match(text)
    if m:
        entry.authors = _authors(m.group("authors"))
        entry.year = int(m.group("year"))
        rest = _sentences(m.group("rest"))
        entry.title = rest[0].rstrip(".") if rest else None
        return entry
    year = YEAR.findall(text)
    entry.year = int(year[-1]) if year else None
    if ";" in text.split(".")[0] or re.match(r"^[^,]+,\s*[A-Z]\.", text):
        # "Surname, I.; Surname, I. Title. Journal 2017": the authors end at
        # the last initial followed by a capitalised word.
        m2 = re.match(r"^(?P<a>(?:[^;]+;\s*)*[^;]*?[A-Z]\.)\s+(?P<rest>[A-Z](?!\.).+)$", text)
        if m2:
            entry.authors = _authors(m2.group("a"))
            rest = _sentences(m2.group("rest"))
            entry.title = rest[0].rstrip(".") if rest else None
            return entry
    parts = _sentences(text)
    if len(parts) >= 2:
        entry.authors = _authors(parts[0])
        entry.title = parts[1].rstrip(".")
    return entry


def _citable(norm_title: str) -> bool:
    return len(norm_title) >= MIN_TITLE_CHARS and norm_title.count(" ") >= 2


def _match(
    entry: DocumentReference, by_doi: dict[str, uuid.UUID], titles: list[tuple[str, uuid.UUID]]
) -> uuid.UUID | None:
    if entry.doi and entry.doi in by_doi:
        return by_doi[entry.doi]
    for title, ident in titles:
        # The library's title inside the entry, or the entry's title a prefix of
        # it (a preprint cited under its shorter first title).
        if title in entry.norm_text or (
            entry.norm_title and len(entry.norm_title) >= 25 and title.startswith(entry.norm_title)
        ):
            return ident
    return None


def _identity(doc: Document) -> tuple[str | None, str]:
    doi = (doc.structure or {}).get("doi")
    return (str(doi).lower() if doi else None), normalise(doc.title or "")


def record_references(
    session_factory: sessionmaker[Session], *, document_id: uuid.UUID, references: list[str]
) -> int:
    """Store the document's entries and make every link it allows; returns links made."""
    linked = 0
    with transaction(session_factory) as db:
        doc = db.get(Document, document_id)
        if doc is None:
            return 0
        # One recorder per collection at a time: two papers citing each other
        # and ingested together must each see the other's rows.
        db.execute(select(func.pg_advisory_xact_lock(func.hashtext(doc.collection))))
        db.execute(delete(DocumentReference).where(DocumentReference.document_id == document_id))
        others = db.scalars(
            select(Document).where(
                Document.collection == doc.collection,
                Document.id != document_id,
                Document.status != DocumentStatus.FAILED,
            )
        ).all()
        by_doi: dict[str, uuid.UUID] = {}
        titles: list[tuple[str, uuid.UUID]] = []
        for other in others:
            doi, title = _identity(other)
            if doi:
                by_doi[doi] = other.id
            if _citable(title):
                titles.append((title, other.id))
        for ordinal, raw in enumerate(references):
            parsed = parse_reference(raw)
            row = DocumentReference(
                document_id=document_id,
                collection=doc.collection,
                ordinal=ordinal,
                text=raw[:4000],
                norm_text=normalise(raw)[:4000],
                norm_title=normalise(parsed.title)[:1000] if parsed.title else None,
                title=parsed.title[:1000] if parsed.title else None,
                authors=parsed.authors or None,
                year=parsed.year,
                doi=parsed.doi[:300] if parsed.doi else None,
            )
            row.cited_document_id = _match(row, by_doi, titles)
            linked += row.cited_document_id is not None
            db.add(row)
        linked += _link_citers(db, doc)
    return linked


def _link_citers(db: Session, doc: Document) -> int:
    """Earlier documents' unlinked entries that cite ``doc`` now point at it."""
    doi, title = _identity(doc)
    conditions = []
    if doi:
        conditions.append(DocumentReference.doi == doi)
    if _citable(title):
        like = title.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions.append(DocumentReference.norm_text.like(f"%{like}%", escape="\\"))
        # The entry's title a prefix of this title (norm text holds no LIKE wildcards).
        conditions.append(
            (func.length(DocumentReference.norm_title) >= 25)
            & literal(title).like(func.concat(DocumentReference.norm_title, "%"))
        )
    if not conditions:
        return 0
    result = db.execute(
        update(DocumentReference)
        .where(
            DocumentReference.collection == doc.collection,
            DocumentReference.document_id != doc.id,
            DocumentReference.cited_document_id.is_(None),
            or_(*conditions),
        )
        .values(cited_document_id=doc.id)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def references_view(db: Session, document_id: uuid.UUID) -> list[dict[str, Any]]:
    """The document's entries in order, each with its linked document's id and title."""
    rows = db.execute(
        select(DocumentReference, Document.title)
        .outerjoin(Document, Document.id == DocumentReference.cited_document_id)
        .where(DocumentReference.document_id == document_id)
        .order_by(DocumentReference.ordinal)
    ).all()
    return [
        {
            "ordinal": ref.ordinal,
            "text": ref.text,
            "title": ref.title,
            "authors": ref.authors or [],
            "year": ref.year,
            "doi": ref.doi,
            "cited_document_id": str(ref.cited_document_id) if ref.cited_document_id else None,
            "cited_title": cited_title,
        }
        for ref, cited_title in rows
    ]
