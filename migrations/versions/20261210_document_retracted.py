"""document_retracted: a ``retracted`` flag on documents

Set by the library's metadata lookup (OpenAlex ``is_retracted``, a Crossref
retraction notice); the survey's citation check fails a claim citing one.
Existing rows are not retracted until a lookup says so.

Revision ID: document_retracted
Revises: email_notifications
Create Date: 2026-12-10 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "document_retracted"
down_revision: str | None = "email_notifications"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "documents",
        sa.Column("retracted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("documents", "retracted")
