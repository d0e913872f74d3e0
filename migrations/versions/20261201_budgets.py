"""budgets, budget reservations and the spend ledger

Revision ID: budgets
Revises: 0002b
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "budgets"
down_revision: str | None = "approvals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "budgets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.String(length=10), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("usd_limit", sa.Numeric(14, 6), nullable=False),
        sa.Column("token_limit", sa.BigInteger(), nullable=True),
        sa.Column("period", sa.String(length=10), nullable=False),
        sa.Column("reset_day", sa.Integer(), nullable=False),
        sa.Column("soft_threshold", sa.Float(), nullable=True),
        sa.Column("period_ends_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("spent_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("spent_tokens", sa.BigInteger(), nullable=False),
        sa.Column("reserved_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("reserved_tokens", sa.BigInteger(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "(scope = 'user' AND user_id IS NOT NULL AND project_id IS NULL) OR "
            "(scope = 'project' AND project_id IS NOT NULL AND user_id IS NULL)",
            name=op.f("ck_budgets_one_owner"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_budgets_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_budgets_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budgets")),
    )
    op.create_index(
        "uq_budgets_user",
        "budgets",
        ["user_id"],
        unique=True,
        postgresql_where=sa.text("scope = 'user'"),
    )
    op.create_index(
        "uq_budgets_project",
        "budgets",
        ["project_id"],
        unique=True,
        postgresql_where=sa.text("scope = 'project'"),
    )
    op.create_table(
        "budget_reservations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("fence", sa.BigInteger(), nullable=False),
        sa.Column("budget_ids", postgresql.ARRAY(sa.Uuid()), nullable=False),
        sa.Column("usd", sa.Numeric(14, 6), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_budget_reservations_job_id_jobs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budget_reservations")),
    )
    op.create_index(
        op.f("ix_budget_reservations_job_id"), "budget_reservations", ["job_id"], unique=False
    )
    op.create_table(
        "spend",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Numeric(14, 6), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_spend_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_spend_project_id_projects"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_spend_job_id_jobs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spend")),
    )
    op.create_index("ix_spend_created_at", "spend", ["created_at"], unique=False)
    op.create_index(op.f("ix_spend_user_id"), "spend", ["user_id"], unique=False)
    op.create_index(op.f("ix_spend_project_id"), "spend", ["project_id"], unique=False)
    op.create_index(op.f("ix_spend_job_id"), "spend", ["job_id"], unique=False)


def downgrade() -> None:
    op.drop_table("spend")
    op.drop_table("budget_reservations")
    op.drop_table("budgets")
