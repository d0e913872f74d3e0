"""jobs.step_seq: the number of a job's last ledger step, taken under the job row's lock

Step numbers were ``max(seq) + 1`` read from each statement's snapshot, so steps
written at once (a survey's parallel sections) could share a number. Existing
jobs start from their highest number; earlier duplicates are renumbered in order.

Revision ID: step_seq
Revises: memory_proposals
Create Date: 2026-12-03 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "step_seq"
down_revision: str | None = "memory_proposals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("step_seq", sa.Integer(), server_default="0", nullable=False))
    op.execute(
        """
        UPDATE job_steps SET seq = r.n
          FROM (SELECT id, row_number() OVER (PARTITION BY job_id
                                              ORDER BY seq, started_at, id) AS n
                  FROM job_steps) AS r
         WHERE job_steps.id = r.id AND job_steps.seq <> r.n
        """
    )
    op.execute(
        """
        UPDATE jobs SET step_seq = s.top
          FROM (SELECT job_id, max(seq) AS top FROM job_steps GROUP BY job_id) AS s
         WHERE jobs.id = s.job_id
        """
    )


def downgrade() -> None:
    op.drop_column("jobs", "step_seq")
