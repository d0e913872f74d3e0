"""Citation keys: how they are made, found in text, and resolved to real sources.

A key (``scibert2019pretrained``) is made from what the library knows of a
paper — first author's surname when known, else the title's first word, then
the year and the title's first significant word — and is unique within a
survey. A key resolves when it names a paper gathered for this survey that is
a library document still in the library, or an OpenAlex record validated in
gather. Anything else does not resolve and never reaches the report as a
citation. A key that resolves to a library document marked retracted (the
library's metadata lookup, services/library/metadata/lookup.py) fails its own
check, ``not_retracted`` (gather never takes a retracted OpenAlex record).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.bibliography.keys import make_key
from services.common.models import Document

__all__ = ["guess_year", "keys_in", "make_key", "strip_citations"]  # make_key: common's, as before

# Inside [...] a citation is @key; keys are letters, digits and ``_:-``.
CITATION_RE = re.compile(r"\[((?:[^\[\]]*?@[A-Za-z0-9_:-]+)+[^\[\]]*)\]")
KEY_IN_GROUP_RE = re.compile(r"@([A-Za-z0-9_:-]+)")
ARXIV_NAME_RE = re.compile(r"^(\d{2})(\d{2})\.\d{4,5}")


def guess_year(filename: str | None) -> int | None:
    """The year an arXiv-style file name (``2203.00130v1.pdf``) or a 19xx/20xx in the
    name says; None otherwise (the key then reads ``nd``, and the year is left out)."""
    if not filename:
        return None
    match = ARXIV_NAME_RE.match(filename)
    if match and 1 <= int(match.group(2)) <= 12:
        return 2000 + int(match.group(1))
    found = re.search(r"(19[89]\d|20[0-3]\d)", filename)
    return int(found.group(1)) if found else None


def keys_in(text: str) -> list[str]:
    """Every ``[@key]`` / ``[@a; @b]`` citation in text, in order of appearance."""
    found: list[str] = []
    for group in CITATION_RE.findall(text):
        found.extend(KEY_IN_GROUP_RE.findall(group))
    return found


def strip_citations(text: str) -> str:
    """The text without its citation brackets (for a claim listed as unverified)."""
    return re.sub(r"\s*" + CITATION_RE.pattern, "", text).strip()


def resolving(
    db: Session, papers: dict[str, dict[str, Any]], keys: Iterable[str]
) -> dict[str, str | None]:
    """For each key: None when it resolves, else why it does not."""
    wanted = set(keys)
    doc_ids = {
        uuid.UUID(p["document_id"])
        for k, p in papers.items()
        if k in wanted and p.get("document_id")
    }
    present = (
        set(db.scalars(select(Document.id).where(Document.id.in_(doc_ids)))) if doc_ids else set()
    )
    why: dict[str, str | None] = {}
    for key in wanted:
        paper = papers.get(key)
        if paper is None:
            why[key] = "no paper with this key was gathered for the survey"
        elif paper.get("document_id"):
            gone = uuid.UUID(paper["document_id"]) not in present
            why[key] = "its library document no longer exists" if gone else None
        elif paper.get("openalex_id"):
            why[key] = None
        else:
            why[key] = "neither a library document nor a validated OpenAlex record"
    return why


def retracted_keys(db: Session, papers: dict[str, dict[str, Any]], keys: Iterable[str]) -> set[str]:
    """The keys whose library document is marked retracted."""
    by_doc = {
        uuid.UUID(p["document_id"]): k
        for k, p in papers.items()
        if k in set(keys) and p.get("document_id")
    }
    if not by_doc:
        return set()
    rows = db.scalars(
        select(Document.id).where(Document.id.in_(by_doc), Document.retracted.is_(True))
    )
    return {by_doc[i] for i in rows}
