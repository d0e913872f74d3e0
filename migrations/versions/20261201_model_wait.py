"""jobs.model_wait_since, jobs.model_wait: jobs parked while their model endpoint is down

Revision ID: model_wait
Revises: lost_slices
Create Date: 2026-12-01 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "model_wait"
down_revision: str | None = "lost_slices"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("model_wait_since", sa.DateTime(timezone=True)))
    op.add_column("jobs", sa.Column("model_wait", postgresql.JSONB()))


def downgrade() -> None:
    # A job parked at the downgrade would be stranded in a status the old code does
    # not know: put it back in the queue (it re-runs the call that found the outage).
    op.execute(
        "UPDATE jobs SET status = 'queued', enqueued_at = NULL WHERE status = 'waiting_model'"
    )
    op.drop_column("jobs", "model_wait")
    op.drop_column("jobs", "model_wait_since")
