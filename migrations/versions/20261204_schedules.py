"""schedules: recurring jobs (cron + timezone), each run a normal job linked to its slot

``jobs.schedule_id`` + ``jobs.schedule_slot`` are UNIQUE together: however many
API processes fire schedules at once, and whatever their clocks say, one slot
of one schedule can never produce two jobs (services/api/schedules/firing.py
claims the slot first; this constraint is what makes a second job impossible).

Revision ID: schedules
Revises: document_metadata
Create Date: 2026-12-04 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "schedules"
down_revision: str | None = "document_metadata"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("cron", sa.String(length=200), nullable=False),
        sa.Column("timezone", sa.String(length=100), nullable=False),
        sa.Column("job", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("paused", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("next_slot", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_schedules_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_schedules_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
    )
    op.create_index(op.f("ix_schedules_user_id"), "schedules", ["user_id"])
    op.create_index(op.f("ix_schedules_project_id"), "schedules", ["project_id"])
    # What every poll asks: the unpaused schedules whose next slot has come.
    op.create_index(
        "ix_schedules_due",
        "schedules",
        ["next_slot"],
        postgresql_where=sa.text("NOT paused"),
    )
    op.add_column("jobs", sa.Column("schedule_id", sa.Uuid(), nullable=True))
    op.add_column("jobs", sa.Column("schedule_slot", sa.DateTime(timezone=True), nullable=True))
    op.create_foreign_key(
        op.f("fk_jobs_schedule_id_schedules"),
        "jobs",
        "schedules",
        ["schedule_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_unique_constraint("uq_jobs_schedule_slot", "jobs", ["schedule_id", "schedule_slot"])


def downgrade() -> None:
    op.drop_constraint("uq_jobs_schedule_slot", "jobs", type_="unique")
    op.drop_constraint(op.f("fk_jobs_schedule_id_schedules"), "jobs", type_="foreignkey")
    op.drop_column("jobs", "schedule_slot")
    op.drop_column("jobs", "schedule_id")
    op.drop_table("schedules")
