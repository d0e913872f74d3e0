"""Bibliography imports: one row per import job, one per entry of its file.

The entries are written when the file is accepted, each ``pending``; the
library's ``library.import`` task settles them one at a time, each in the same
transaction as the document it creates, so a crash between entries resumes at
the first pending one and never creates a document twice.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.contracts.collections import Collection
from services.common.models.base import Base, Timestamped, new_id
from services.common.models.collection_column import CollectionText

IMPORT_QUEUED, IMPORT_RUNNING, IMPORT_DONE = "queued", "running", "done"
IMPORT_STATUSES = (IMPORT_QUEUED, IMPORT_RUNNING, IMPORT_DONE)
IMPORT_IN_FLIGHT = (IMPORT_QUEUED, IMPORT_RUNNING)

# pending: not yet settled. matched: the library already held the paper (same
# DOI, arXiv id or title). fetched: a new document whose PDF was downloaded and
# queued for ingestion. metadata_only: a new document without a PDF (none known,
# or the download failed: ``reason``). skipped: the file's entry was unusable.
ENTRY_PENDING = "pending"
ENTRY_MATCHED = "matched"
ENTRY_FETCHED = "fetched"
ENTRY_METADATA_ONLY = "metadata_only"
ENTRY_SKIPPED = "skipped"
ENTRY_STATES = (ENTRY_PENDING, ENTRY_MATCHED, ENTRY_FETCHED, ENTRY_METADATA_ONLY, ENTRY_SKIPPED)
ENTRY_SETTLED = ENTRY_STATES[1:]


class LibraryImport(Timestamped, Base):
    __tablename__ = "library_imports"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    owner_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, nullable=False
    )
    # Where its documents go: "user:<id>", "project:<id>" or "lab".
    collection: Mapped[Collection] = mapped_column(
        CollectionText("library_imports.collection"), nullable=False
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    filename: Mapped[str | None] = mapped_column(String(500))
    format: Mapped[str] = mapped_column(String(30), nullable=False)
    status: Mapped[str] = mapped_column(String(20), default=IMPORT_QUEUED, nullable=False)
    total: Mapped[int] = mapped_column(Integer, nullable=False)
    error: Mapped[str | None] = mapped_column(Text)
    # The same lease as a document's ingestion (services/library/lease.py).
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LibraryImportEntry(Base):
    __tablename__ = "library_import_entries"
    __table_args__ = (
        UniqueConstraint("import_id", "ordinal", name="uq_library_import_entries_ordinal"),
        Index("ix_library_import_entries_state", "import_id", "state"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    import_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("library_imports.id", ondelete="CASCADE"), nullable=False
    )
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)
    key: Mapped[str | None] = mapped_column(String(200))
    title: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(20), default=ENTRY_PENDING, nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    # The parsed entry (services/common/bibliography/entry.py Entry.as_dict()).
    entry: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    document_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("documents.id", ondelete="SET NULL")
    )
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
