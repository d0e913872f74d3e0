"""webhooks: signed notifications when a job ends, from a durable outbox

A trigger on ``jobs`` writes one outbox row per matching webhook in the same
transaction as the status change, whichever code path changes it (a worker's
finish, a budget pause, an approval wait, a cancel from the API): a
notification exists exactly when the change committed, and is never lost to a
crash between the change and its sending.

Revision ID: webhooks
Revises: invites
Create Date: 2026-12-03 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "webhooks"
down_revision: str | None = "invites"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Statuses that notify (the event is "job." + status). Only top-level jobs: a
# batch's tasks and an agent's subagents end inside the job their owner watches.
OUTBOX_FUNCTION = """
CREATE OR REPLACE FUNCTION leaflab_webhook_outbox() RETURNS trigger AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, webhook_id, job_id, event, body)
    SELECT gen_random_uuid(), w.id, NEW.id, 'job.' || NEW.status,
           jsonb_build_object(
               'event', 'job.' || NEW.status,
               'job', jsonb_build_object(
                   'id', NEW.id, 'kind', NEW.kind, 'status', NEW.status,
                   'error', NEW.error, 'user_id', NEW.user_id,
                   'project_id', NEW.project_id, 'session_id', NEW.session_id,
                   'created_at', NEW.created_at, 'finished_at', NEW.finished_at),
               'occurred_at', now())
      FROM webhooks w
     WHERE NOT w.disabled
       AND ('job.' || NEW.status) = ANY (w.events)
       AND ((w.project_id IS NULL AND w.user_id = NEW.user_id)
            OR w.project_id = NEW.project_id);
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""
OUTBOX_TRIGGER = """
CREATE TRIGGER jobs_webhook_outbox
AFTER UPDATE OF status ON jobs
FOR EACH ROW
WHEN (NEW.status IS DISTINCT FROM OLD.status
      AND NEW.parent_job_id IS NULL
      AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'waiting_approval',
                         'budget_exhausted'))
EXECUTE FUNCTION leaflab_webhook_outbox()
"""


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("events", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_webhooks_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_webhooks_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    op.create_index(op.f("ix_webhooks_user_id"), "webhooks", ["user_id"], unique=False)
    op.create_index(op.f("ix_webhooks_project_id"), "webhooks", ["project_id"], unique=False)
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("webhook_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("body", postgresql.JSONB(), nullable=False),
        sa.Column("status", sa.String(length=20), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhooks.id"],
            name=op.f("fk_webhook_deliveries_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_webhook_deliveries_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["next_attempt_at"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        op.f("ix_webhook_deliveries_webhook_id"), "webhook_deliveries", ["webhook_id"]
    )
    op.create_index(op.f("ix_webhook_deliveries_job_id"), "webhook_deliveries", ["job_id"])
    op.execute(OUTBOX_FUNCTION)
    op.execute(OUTBOX_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS jobs_webhook_outbox ON jobs")
    op.execute("DROP FUNCTION IF EXISTS leaflab_webhook_outbox()")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
