"""document ingest lease: lease_owner, lease_until, attempts

Revision ID: 0002b
Revises: 0001
Create Date: 2026-11-30 16:15:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002b"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("documents", sa.Column("lease_owner", sa.String(length=100), nullable=True))
    op.add_column("documents", sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "documents", sa.Column("attempts", sa.Integer(), server_default="0", nullable=False)
    )
    # The sweeper scans only documents still in flight.
    op.create_index(
        "ix_documents_in_flight",
        "documents",
        ["lease_until"],
        postgresql_where=sa.text("status NOT IN ('ready', 'failed')"),
    )


def downgrade() -> None:
    op.drop_index("ix_documents_in_flight", table_name="documents")
    op.drop_column("documents", "attempts")
    op.drop_column("documents", "lease_until")
    op.drop_column("documents", "lease_owner")
