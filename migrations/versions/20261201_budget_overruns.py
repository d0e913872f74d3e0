"""budget overruns: what servers reported beyond a call's charge; estimated usage flags

Revision ID: budget_overruns
Revises: model_wait
Create Date: 2026-12-01 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "budget_overruns"
down_revision: str | None = "model_wait"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "budgets",
        sa.Column("overrun_usd", sa.Numeric(14, 6), server_default="0", nullable=False),
    )
    op.add_column("budgets", sa.Column("overrun_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "spend", sa.Column("estimated", sa.Boolean(), server_default="false", nullable=False)
    )
    op.add_column(
        "jobs", sa.Column("usage_estimated", sa.Boolean(), server_default="false", nullable=False)
    )
    op.create_table(
        "budget_overruns",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("budget_id", sa.Uuid(), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=20), nullable=False),
        sa.Column("reported_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("charged_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("overrun_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("reported_tokens", sa.BigInteger(), nullable=False),
        sa.Column("charged_tokens", sa.BigInteger(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["budget_id"],
            ["budgets.id"],
            name=op.f("fk_budget_overruns_budget_id_budgets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_budget_overruns_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_budget_overruns_project_id_projects"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_budget_overruns_job_id_jobs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budget_overruns")),
    )
    op.create_index(
        op.f("ix_budget_overruns_budget_id"), "budget_overruns", ["budget_id"], unique=False
    )
    op.create_index(op.f("ix_budget_overruns_job_id"), "budget_overruns", ["job_id"], unique=False)
    op.create_index(
        "ix_budget_overruns_created_at", "budget_overruns", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_table("budget_overruns")
    op.drop_column("jobs", "usage_estimated")
    op.drop_column("spend", "estimated")
    op.drop_column("budgets", "overrun_at")
    op.drop_column("budgets", "overrun_usd")
