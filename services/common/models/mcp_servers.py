"""The MCP server list an admin stored (one row); see services/common/mcp_servers.py."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import BigInteger, CheckConstraint, DateTime, ForeignKey, SmallInteger, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from services.common.models.base import Base


class McpServerList(Base):
    """Never deleted: clearing the list sets ``servers`` to NULL and bumps ``version``, so
    a worker comparing versions can never mistake a new list for one it has seen."""

    __tablename__ = "mcp_server_lists"
    __table_args__ = (CheckConstraint("id = 1", name="mcp_server_lists_one_row"),)
    SINGLETON: ClassVar[int] = 1

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, default=1)
    # The list as the admin sent it (validated); NULL: none stored, the env list applies.
    servers: Mapped[list[Any] | None] = mapped_column(JSONB(none_as_null=True))
    version: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    updated_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
