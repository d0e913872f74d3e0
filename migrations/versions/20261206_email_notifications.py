"""email_notifications: per-user/project settings, in-app notifications, an e-mail outbox

A second trigger on ``jobs`` (beside ``jobs_webhook_outbox``) writes, in the
transaction that changes a top-level job's status, one in-app notification for
its owner and one e-mail delivery per recipient the settings select: the job's
owner (unless their settings say no) and, where the project's settings say so,
its members. Like the webhooks' outbox, a notification exists exactly when the
change committed and is never lost to a crash before it is sent.

Revision ID: email_notifications
Revises: library_imports
Create Date: 2026-12-04 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "email_notifications"
down_revision: str | None = "library_imports"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The events of services/common/notification_events.py: without a settings row a
# user hears of all of them, in the app and by e-mail; a project e-mails nobody.
DEFAULT_EVENTS = "ARRAY['job.succeeded','job.failed','job.waiting_approval','job.budget_exhausted']"

OUTBOX_FUNCTION = f"""
CREATE OR REPLACE FUNCTION leaflab_notification_outbox() RETURNS trigger AS $$
DECLARE
    ev text := 'job.' || NEW.status;
    snapshot jsonb := jsonb_build_object(
        'kind', NEW.kind, 'status', NEW.status,
        'title', left(coalesce(NEW.input->>'title', NEW.input->>'topic',
                               NEW.input->>'content', NEW.kind), 300),
        'cost_usd', NEW.cost_usd, 'project_id', NEW.project_id);
BEGIN
    -- The owner's own settings filter both the in-app row and their e-mail.
    INSERT INTO notifications (id, user_id, job_id, project_id, event, body)
    SELECT gen_random_uuid(), NEW.user_id, NEW.id, NEW.project_id, ev, snapshot
     WHERE ev = ANY (coalesce(
               (SELECT s.events FROM notification_settings s
                 WHERE s.user_id = NEW.user_id AND s.project_id IS NULL),
               {DEFAULT_EVENTS}));

    INSERT INTO email_deliveries (id, user_id, job_id, event, to_address, body)
    SELECT gen_random_uuid(), r.id, NEW.id, ev, r.email, snapshot
      FROM (
        -- the owner, by their own settings
        SELECT u.id, u.email FROM users u
          LEFT JOIN notification_settings s ON s.user_id = u.id AND s.project_id IS NULL
         WHERE u.id = NEW.user_id
           AND coalesce(s.email, true)
           AND ev = ANY (coalesce(s.events, {DEFAULT_EVENTS}))
        UNION
        -- the project's members (or owners), by the project's settings; a member
        -- who turned their own e-mail off gets none
        SELECT u.id, u.email FROM notification_settings p
          JOIN project_members m ON m.project_id = p.project_id
          JOIN users u ON u.id = m.user_id
          LEFT JOIN notification_settings s ON s.user_id = u.id AND s.project_id IS NULL
         WHERE p.project_id = NEW.project_id AND p.user_id IS NULL
           AND p.email AND ev = ANY (p.events)
           AND (p.recipients = 'members' OR m.role = 'owner')
           AND coalesce(s.email, true)
      ) r
      JOIN users active ON active.id = r.id AND NOT active.disabled;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""
OUTBOX_TRIGGER = """
CREATE TRIGGER jobs_notification_outbox
AFTER UPDATE OF status ON jobs
FOR EACH ROW
WHEN (NEW.status IS DISTINCT FROM OLD.status
      AND NEW.parent_job_id IS NULL
      AND NEW.status IN ('succeeded', 'failed', 'waiting_approval', 'budget_exhausted'))
EXECUTE FUNCTION leaflab_notification_outbox()
"""


def _created_at() -> sa.Column:
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def _fk(column: str, table: str, source: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{table}.id"], name=op.f(f"fk_{source}_{column}_{table}"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "notification_settings",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("email", sa.Boolean(), nullable=False),
        sa.Column("events", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("recipients", sa.String(length=20), server_default="owners", nullable=False),
        _created_at(),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        _fk("user_id", "users", "notification_settings"),
        _fk("project_id", "projects", "notification_settings"),
        sa.CheckConstraint(
            "num_nonnulls(user_id, project_id) = 1",
            name=op.f("ck_notification_settings_one_owner"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_settings")),
    )
    op.create_index(
        "uq_notification_settings_user",
        "notification_settings",
        ["user_id"],
        unique=True,
        postgresql_where=sa.text("project_id IS NULL"),
    )
    op.create_index(
        "uq_notification_settings_project",
        "notification_settings",
        ["project_id"],
        unique=True,
        postgresql_where=sa.text("user_id IS NULL"),
    )
    op.create_table(
        "notifications",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("body", postgresql.JSONB(), nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=True),
        _created_at(),
        _fk("user_id", "users", "notifications"),
        _fk("job_id", "jobs", "notifications"),
        _fk("project_id", "projects", "notifications"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    op.create_index(
        "ix_notifications_user_created", "notifications", ["user_id", "created_at"], unique=False
    )
    op.create_index(op.f("ix_notifications_job_id"), "notifications", ["job_id"])
    op.create_table(
        "email_deliveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("to_address", sa.String(length=320), nullable=False),
        sa.Column("body", postgresql.JSONB(), nullable=False),
        sa.Column("status", sa.String(length=20), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "next_attempt_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        _created_at(),
        _fk("user_id", "users", "email_deliveries"),
        _fk("job_id", "jobs", "email_deliveries"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_email_deliveries")),
    )
    op.create_index(
        "ix_email_deliveries_due",
        "email_deliveries",
        ["next_attempt_at"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(op.f("ix_email_deliveries_job_id"), "email_deliveries", ["job_id"])
    op.create_index(op.f("ix_email_deliveries_user_id"), "email_deliveries", ["user_id"])
    op.execute(OUTBOX_FUNCTION)
    op.execute(OUTBOX_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS jobs_notification_outbox ON jobs")
    op.execute("DROP FUNCTION IF EXISTS leaflab_notification_outbox()")
    op.drop_table("email_deliveries")
    op.drop_table("notifications")
    op.drop_table("notification_settings")
