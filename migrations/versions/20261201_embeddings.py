"""embedding_cache: chunk vectors keyed by (model, sha256(text))

Revision ID: embeddings
Revises: 0002b
Create Date: 2026-12-01 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "embeddings"
down_revision: str | None = "parsing"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "embedding_cache",
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("model", "text_sha256"),
    )


def downgrade() -> None:
    op.drop_table("embedding_cache")
