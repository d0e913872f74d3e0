"""library_imports: bibliography import jobs and their entries; metadata-only documents

Revision ID: library_imports
Revises: schedules
Create Date: 2026-12-03 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "library_imports"
down_revision: str | None = "schedules"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "library_imports",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("collection", sa.String(length=100), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("filename", sa.String(length=500), nullable=True),
        sa.Column("format", sa.String(length=30), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_library_imports_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_library_imports_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_imports")),
    )
    op.create_index(op.f("ix_library_imports_owner_id"), "library_imports", ["owner_id"])
    op.create_index(op.f("ix_library_imports_project_id"), "library_imports", ["project_id"])
    op.create_table(
        "library_import_entries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("import_id", sa.Uuid(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("entry", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("document_id", sa.Uuid(), nullable=True),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["import_id"],
            ["library_imports.id"],
            name=op.f("fk_library_import_entries_import_id_library_imports"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_library_import_entries_document_id_documents"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_import_entries")),
        sa.UniqueConstraint("import_id", "ordinal", name="uq_library_import_entries_ordinal"),
    )
    op.create_index(
        "ix_library_import_entries_state", "library_import_entries", ["import_id", "state"]
    )
    # Metadata-only documents are settled: keep them out of the sweeper's index.
    op.drop_index("ix_documents_in_flight", table_name="documents")
    op.create_index(
        "ix_documents_in_flight",
        "documents",
        ["lease_until"],
        postgresql_where=sa.text("status NOT IN ('ready', 'failed', 'metadata_only')"),
    )


def downgrade() -> None:
    op.drop_index("ix_documents_in_flight", table_name="documents")
    op.create_index(
        "ix_documents_in_flight",
        "documents",
        ["lease_until"],
        postgresql_where=sa.text("status NOT IN ('ready', 'failed')"),
    )
    op.drop_index("ix_library_import_entries_state", table_name="library_import_entries")
    op.drop_table("library_import_entries")
    op.drop_index(op.f("ix_library_imports_project_id"), table_name="library_imports")
    op.drop_index(op.f("ix_library_imports_owner_id"), table_name="library_imports")
    op.drop_table("library_imports")
