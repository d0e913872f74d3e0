"""What the library already holds where the importing user can read: each document
by DOI, arXiv id and normalised title, the import's target collection first.

Loaded once per run of an import (one query) and added to as the run creates
documents, so a paper listed twice in one file is matched the second time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.common.bibliography import Entry, normalise_title
from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.models import Document

# Titles shorter than this ("Introduction", "Notes") would match unrelated papers.
MIN_TITLE_CHARS = 15


@dataclass
class Catalog:
    target: Collection
    by_doi: dict[str, uuid.UUID] = field(default_factory=dict)
    by_arxiv: dict[str, uuid.UUID] = field(default_factory=dict)
    by_title: dict[str, uuid.UUID] = field(default_factory=dict)

    def add(
        self, doc_id: uuid.UUID, *, doi: str | None, arxiv_id: str | None, title: str | None
    ) -> None:
        """Remember a document; the first one seen for a key keeps it."""
        if doi:
            self.by_doi.setdefault(doi.lower(), doc_id)
        if arxiv_id:
            self.by_arxiv.setdefault(arxiv_id, doc_id)
        norm = normalise_title(title or "")
        if len(norm) >= MIN_TITLE_CHARS:
            self.by_title.setdefault(norm, doc_id)

    def find(self, entry: Entry) -> uuid.UUID | None:
        """The document this entry is: same DOI, else same arXiv id, else same title."""
        if entry.doi and entry.doi in self.by_doi:
            return self.by_doi[entry.doi]
        if entry.arxiv_id and entry.arxiv_id in self.by_arxiv:
            return self.by_arxiv[entry.arxiv_id]
        return self.by_title.get(entry.norm_title())


def load_catalog(db: Session, *, collections: list[Collection], target: Collection) -> Catalog:
    """Every usable document of ``collections``; the target's own win ties, then the oldest."""
    rows = db.execute(
        select(Document.id, Document.collection, Document.doi, Document.arxiv_id, Document.title)
        .where(Document.collection.in_(collections), Document.status != DocumentStatus.FAILED)
        .order_by(Document.created_at, Document.id)
    ).all()
    catalog = Catalog(target)
    for own in (True, False):
        for doc_id, collection, doi, arxiv_id, title in rows:
            if (collection == target) == own:
                catalog.add(doc_id, doi=doi, arxiv_id=arxiv_id, title=title)
    return catalog
