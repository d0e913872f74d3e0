"""mcp_servers: the MCP server list an admin stores through the API (one row)

The row exists from the start with ``servers`` NULL (no list stored:
LEAFLAB_MCP_SERVERS applies) and version 0; every PUT or DELETE of
/v1/admin/mcp-servers rewrites it and bumps ``version``, which the agent
workers poll to pick the change up without a restart.

Revision ID: mcp_servers
Revises: document_retracted
Create Date: 2026-12-10 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "mcp_servers"
down_revision: str | None = "document_retracted"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_server_lists",
        sa.Column("id", sa.SmallInteger(), primary_key=True),
        sa.Column("servers", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("version", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_by", sa.Uuid(), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True
        ),
        sa.CheckConstraint("id = 1", name="mcp_server_lists_one_row"),
    )
    op.execute("INSERT INTO mcp_server_lists (id, servers, version) VALUES (1, NULL, 0)")


def downgrade() -> None:
    op.drop_table("mcp_server_lists")
