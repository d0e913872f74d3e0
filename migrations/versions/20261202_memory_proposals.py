"""memory_proposals: project memory writes by non-owner members, held for an owner;
memory_documents.updated_by: who wrote a document's text

Revision ID: memory_proposals
Revises: budget_overruns
Create Date: 2026-12-02 05:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "memory_proposals"
down_revision: str | None = "budget_overruns"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("memory_documents", sa.Column("updated_by", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_memory_documents_updated_by_users"),
        "memory_documents",
        "users",
        ["updated_by"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_table(
        "memory_proposals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("base_sha256", sa.String(length=64), nullable=True),
        sa.Column("proposed_by", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("step_key", sa.String(length=300), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("decided_by", sa.Uuid(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_memory_proposals_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["proposed_by"],
            ["users.id"],
            name=op.f("fk_memory_proposals_proposed_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_memory_proposals_job_id_jobs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["decided_by"],
            ["users.id"],
            name=op.f("fk_memory_proposals_decided_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_proposals")),
        sa.UniqueConstraint("job_id", "step_key", name="uq_memory_proposals_job_step"),
    )
    op.create_index(
        op.f("ix_memory_proposals_project_id"), "memory_proposals", ["project_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_memory_proposals_project_id"), table_name="memory_proposals")
    op.drop_table("memory_proposals")
    op.drop_constraint(
        op.f("fk_memory_documents_updated_by_users"), "memory_documents", type_="foreignkey"
    )
    op.drop_column("memory_documents", "updated_by")
