"""memory documents per user and per project

Revision ID: context
Revises: 0002b
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "context"
down_revision: str | None = "0002b"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_documents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.String(length=20), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("updated_by_job", sa.Uuid(), nullable=True),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(["updated_by_job"], ["jobs.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("scope", "owner_id", "kind", name="uq_memory_documents_owner_kind"),
    )
    op.create_index("ix_memory_documents_owner_id", "memory_documents", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_memory_documents_owner_id", table_name="memory_documents")
    op.drop_table("memory_documents")
