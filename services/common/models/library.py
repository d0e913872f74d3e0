"""Documents of the lab's paper library (text and vectors live in Qdrant)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DOCUMENT_SETTLED, DocumentStatus, sql_list
from services.common.models.base import Base, Timestamped, new_id
from services.common.models.collection_column import CollectionText

# metadata_only: a bibliography entry kept without a PDF (no passages, never
# ingested); like ready and failed it is settled, out of the sweeper's sight.
METADATA_ONLY = DocumentStatus.METADATA_ONLY
DOCUMENT_STATUSES = tuple(DocumentStatus)


class Document(Timestamped, Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("collection", "content_hash", name="uq_documents_collection_hash"),
        # The library sweeper scans only documents still in flight.
        Index(
            "ix_documents_in_flight",
            "lease_until",
            postgresql_where=text(f"status NOT IN ({sql_list(DOCUMENT_SETTLED)})"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    # A project's, a member's personal library or the lab's (contracts/collections.py).
    collection: Mapped[Collection] = mapped_column(
        CollectionText("documents.collection"), index=True, nullable=False
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    filename: Mapped[str | None] = mapped_column(String(500))
    source_url: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    status: Mapped[DocumentStatus] = mapped_column(
        String(20), default=DocumentStatus.QUEUED, nullable=False
    )
    error: Mapped[str | None] = mapped_column(Text)
    pages: Mapped[int | None] = mapped_column(Integer)
    chunks: Mapped[int | None] = mapped_column(Integer)
    structure: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    # Bibliographic metadata (services/library/metadata): each field's origin in
    # metadata_source ("pdf", "layout", "text", "filename", "openalex", "crossref", "import",
    # "manual"); a "manual" or "import" field is never overwritten by extraction.
    authors: Mapped[list[str] | None] = mapped_column(JSONB)
    year: Mapped[int | None] = mapped_column(Integer)
    venue: Mapped[str | None] = mapped_column(Text)
    doi: Mapped[str | None] = mapped_column(String(300), index=True)
    arxiv_id: Mapped[str | None] = mapped_column(String(50), index=True)
    metadata_source: Mapped[dict[str, str] | None] = mapped_column(JSONB)
    # The earlier document with the same DOI or arXiv id among the uploader's
    # readable collections; this one stays, shown as a duplicate.
    duplicate_of: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("documents.id", ondelete="SET NULL")
    )
    # The paper was retracted, as a metadata lookup (OpenAlex ``is_retracted``,
    # Crossref's retraction notice) said; citing it fails the survey's check.
    retracted: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=text("false"), nullable=False
    )
    # The ingest lease: who is working on the document and until when. A
    # worker that dies leaves an expired lease, which the library's sweeper
    # retries (attempts counts claims) or, after too many, fails with a reason.
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class DocumentReference(Base):
    """One entry of a document's reference list, linked to the cited library
    document when the library holds it (same collection; by DOI, else title)."""

    __tablename__ = "document_references"
    __table_args__ = (
        UniqueConstraint("document_id", "ordinal", name="uq_document_references_ordinal"),
        Index("ix_document_references_collection_doi", "collection", "doi"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    document_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), nullable=False
    )
    # The citing document's collection: links never cross collections.
    collection: Mapped[Collection] = mapped_column(
        CollectionText("document_references.collection"), nullable=False
    )
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    # Lower-case letters and digits, single spaces: what titles are matched in.
    norm_text: Mapped[str] = mapped_column(Text, nullable=False)
    title: Mapped[str | None] = mapped_column(Text)
    norm_title: Mapped[str | None] = mapped_column(Text)
    authors: Mapped[list[str] | None] = mapped_column(JSONB)
    year: Mapped[int | None] = mapped_column(Integer)
    doi: Mapped[str | None] = mapped_column(String(300))
    cited_document_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("documents.id", ondelete="SET NULL"), index=True
    )
