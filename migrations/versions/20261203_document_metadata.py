"""document_metadata: authors, year, venue, DOI, arXiv id, per-field sources, duplicate_of

Revision ID: document_metadata
Revises: webhooks
Create Date: 2026-12-03 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "document_metadata"
down_revision: str | None = "webhooks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    jsonb = postgresql.JSONB(astext_type=sa.Text())
    op.add_column("documents", sa.Column("authors", jsonb, nullable=True))
    op.add_column("documents", sa.Column("year", sa.Integer(), nullable=True))
    op.add_column("documents", sa.Column("venue", sa.Text(), nullable=True))
    op.add_column("documents", sa.Column("doi", sa.String(length=300), nullable=True))
    op.add_column("documents", sa.Column("arxiv_id", sa.String(length=50), nullable=True))
    op.add_column("documents", sa.Column("metadata_source", jsonb, nullable=True))
    op.add_column("documents", sa.Column("duplicate_of", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_documents_duplicate_of_documents"),
        "documents",
        "documents",
        ["duplicate_of"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_index(op.f("ix_documents_doi"), "documents", ["doi"], unique=False)
    op.create_index(op.f("ix_documents_arxiv_id"), "documents", ["arxiv_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_documents_arxiv_id"), table_name="documents")
    op.drop_index(op.f("ix_documents_doi"), table_name="documents")
    op.drop_constraint(op.f("fk_documents_duplicate_of_documents"), "documents", type_="foreignkey")
    for column in (
        "duplicate_of",
        "metadata_source",
        "arxiv_id",
        "doi",
        "venue",
        "year",
        "authors",
    ):
        op.drop_column("documents", column)
