"""approvals table; projects.approval_mode

Revision ID: approvals
Revises: 0002b
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "approvals"
down_revision: str | None = "accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("step_key", sa.String(length=300), nullable=False),
        sa.Column("tool_name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("diffs", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("baselines", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("feedback", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("decided_by", sa.Uuid(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_approvals_job_id_jobs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["decided_by"], ["users.id"], name="fk_approvals_decided_by_users", ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_approvals"),
        sa.UniqueConstraint("job_id", "step_key", name="uq_approvals_job_step"),
    )
    op.create_index("ix_approvals_job_id", "approvals", ["job_id"])
    # NULL: the deployment's LEAFLAB_APPROVAL_MODE applies.
    op.add_column("projects", sa.Column("approval_mode", sa.String(length=20), nullable=True))


def downgrade() -> None:
    op.drop_column("projects", "approval_mode")
    op.drop_index("ix_approvals_job_id", table_name="approvals")
    op.drop_table("approvals")
