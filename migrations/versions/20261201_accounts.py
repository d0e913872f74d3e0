"""accounts: salted API keys with a looked-up prefix, expiry and project scope; project roles

Revision ID: accounts
Revises: 0002b
Create Date: 2026-12-01 00:00:00

Existing keys keep their unsalted SHA-256 (``salt`` NULL) and keep working:
the API re-hashes each with a salt the first time it is used. Project role
``admin`` becomes ``owner``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "accounts"
down_revision: str | None = "context"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("salt", sa.String(length=32), nullable=True))
    op.add_column("api_keys", sa.Column("project_id", sa.Uuid(), nullable=True))
    op.add_column("api_keys", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.create_foreign_key(
        "fk_api_keys_project_id_projects",
        "api_keys",
        "projects",
        ["project_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index("ix_api_keys_project_id", "api_keys", ["project_id"])
    # Authentication finds a key by its visible prefix, then compares hashes.
    op.create_index("ix_api_keys_prefix", "api_keys", ["prefix"])
    op.execute("UPDATE project_members SET role = 'owner' WHERE role = 'admin'")
    # Dispatch counts a user's running jobs (the per-user cap) and picks the
    # oldest queued ones per user: both walk this index.
    op.create_index(
        "ix_jobs_user_active",
        "jobs",
        ["user_id", "created_at"],
        postgresql_where=sa.text("status IN ('queued', 'running')"),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_user_active", table_name="jobs")
    op.execute("UPDATE project_members SET role = 'admin' WHERE role = 'owner'")
    op.drop_index("ix_api_keys_prefix", table_name="api_keys")
    op.drop_index("ix_api_keys_project_id", table_name="api_keys")
    op.drop_constraint("fk_api_keys_project_id_projects", "api_keys", type_="foreignkey")
    op.drop_column("api_keys", "expires_at")
    op.drop_column("api_keys", "project_id")
    op.drop_column("api_keys", "salt")
