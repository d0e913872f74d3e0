"""document_references: parsed reference entries, linked to cited library documents

Revision ID: parsing
Revises: 0002b
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "parsing"
down_revision: str | None = "budgets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "document_references",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("document_id", sa.Uuid(), nullable=False),
        sa.Column("collection", sa.String(length=100), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("norm_text", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("norm_title", sa.Text(), nullable=True),
        sa.Column("authors", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("year", sa.Integer(), nullable=True),
        sa.Column("doi", sa.String(length=300), nullable=True),
        sa.Column("cited_document_id", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(["document_id"], ["documents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["cited_document_id"], ["documents.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("document_id", "ordinal", name="uq_document_references_ordinal"),
    )
    op.create_index(
        "ix_document_references_collection_doi", "document_references", ["collection", "doi"]
    )
    op.create_index(
        "ix_document_references_cited_document_id", "document_references", ["cited_document_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_document_references_cited_document_id", table_name="document_references")
    op.drop_index("ix_document_references_collection_doi", table_name="document_references")
    op.drop_table("document_references")
