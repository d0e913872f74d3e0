"""``session_history(query?, message_id?, offset?, limit?)``: this session's past messages.

Reads only the persisted messages of the job's own session, and only when that
session belongs to the job's user; nothing else is reachable through it. The
model sees what was said (not the compressed view), newest context included.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.common.models import ChatSession, Message
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult

PREVIEW_CHARS = 300
MAX_MESSAGE_CHARS = 20_000
DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class SessionHistoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(
        default=None, max_length=500, description="Text to search for (case-insensitive)."
    )
    message_id: str | None = Field(
        default=None, max_length=100, description="Show this one message in full."
    )
    offset: int = Field(default=0, ge=0, description="Skip this many matches (oldest first).")
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="At most this many messages."
    )


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _line(m: Message) -> str:
    text = (m.content or "").replace("\n", " ")
    if m.tool_calls:
        text += " [calls: " + ", ".join(c.get("name", "?") for c in m.tool_calls) + "]"
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + "…"
    who = f"{m.role}:{m.name}" if m.name else m.role
    return f"#{m.seq} {who} (id {m.id}): {text}"


class SessionHistoryTool(Tool[SessionHistoryArgs]):
    name: ClassVar[str] = "session_history"
    description: ClassVar[str] = (
        "Search and page through this session's earlier messages (including earlier turns "
        "that may no longer be in your context). Give query to search, message_id to read "
        "one message in full, offset/limit to page."
    )
    args_model = SessionHistoryArgs
    effect: ClassVar[ToolEffect] = ToolEffect.READ_ONLY
    retry_safe: ClassVar[bool] = True

    def run(self, args: SessionHistoryArgs, ctx: ToolContext) -> ToolResult:
        if ctx.db is None or ctx.session_id is None:
            raise ToolError("no_session", "this job has no session history", category="tool")
        session_id = uuid.UUID(ctx.session_id)
        with ctx.db() as db:
            owner = db.scalar(select(ChatSession.user_id).where(ChatSession.id == session_id))
            if owner is None or str(owner) != ctx.user_id:
                raise ToolError("no_session", "this job has no session history", category="tool")
            if args.message_id is not None:
                return _one(db, session_id, args.message_id)
            return _page(db, session_id, args)


def _one(db: Session, session_id: uuid.UUID, raw_id: str) -> ToolResult:
    try:
        message_id = uuid.UUID(raw_id)
    except ValueError:
        message_id = None
    msg = (
        db.scalar(select(Message).where(Message.id == message_id, Message.session_id == session_id))
        if message_id
        else None
    )
    if msg is None:
        raise ToolError(
            "message_not_found",
            f"no message {raw_id!r} in this session; search first to get message ids",
            category="validation",
        )
    text = msg.content or ""
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + "\n…[truncated]"
    header = f"#{msg.seq} {msg.role} (id {msg.id})"
    return ToolResult(content=f"{header}\n{text}", data={"message_id": str(msg.id), "seq": msg.seq})


def _page(db: Session, session_id: uuid.UUID, args: SessionHistoryArgs) -> ToolResult:
    where = [Message.session_id == session_id]
    if args.query:
        where.append(Message.content.ilike(_like(args.query), escape="\\"))
    total = int(db.scalar(select(func.count()).select_from(Message).where(*where)) or 0)
    rows = list(
        db.scalars(
            select(Message)
            .where(*where)
            .order_by(Message.seq)
            .offset(args.offset)
            .limit(args.limit)
        )
    )
    what = f"matching {args.query!r}" if args.query else "in this session"
    if not rows:
        return ToolResult(
            content=f"no messages {what} (offset {args.offset}, {total} in all)",
            data={"total": total, "ids": []},
        )
    end = args.offset + len(rows)
    lines = [f"messages {args.offset + 1}–{end} of {total} {what}:"]
    lines += [_line(m) for m in rows]
    if end < total:
        lines.append(f"(more: offset={end})")
    return ToolResult(
        content="\n".join(lines), data={"total": total, "ids": [str(m.id) for m in rows]}
    )
