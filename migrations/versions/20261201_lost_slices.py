"""jobs.lost_slices: slices in a row whose worker was lost before the job made progress

Revision ID: lost_slices
Revises: embeddings
Create Date: 2026-12-01 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "lost_slices"
down_revision: str | None = "embeddings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "jobs", sa.Column("lost_slices", sa.Integer(), server_default="0", nullable=False)
    )


def downgrade() -> None:
    op.drop_column("jobs", "lost_slices")
