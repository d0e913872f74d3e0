"""A session's persisted history, and the model-facing view of it for one job.

Jobs in a session run one at a time in creation order, so a job's context is
the messages of every earlier job of the session, then its own.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from services.common.message_seq import next_message_seq
from services.common.models import Job, Message
from services.common.one_statement import OneStatement, rows_of


def append_message(
    db: Session,
    *,
    session_id: uuid.UUID,
    job_id: uuid.UUID,
    role: str,
    content: str | None,
    model_content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    name: str | None = None,
) -> Message:
    seq = next_message_seq(db, session_id)
    msg = Message(
        session_id=session_id,
        job_id=job_id,
        seq=seq,
        role=role,
        content=content,
        model_content=model_content,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        name=name,
    )
    db.add(msg)
    db.flush()
    return msg


# Jobs of a session run in creation order: earlier jobs' messages, then the job's own.
MESSAGES_SQL = text(
    """
    SELECT m.id, m.session_id, m.job_id, m.seq, m.role, m.content, m.model_content,
           m.tool_calls, m.tool_call_id, m.name, m.created_at
      FROM messages m JOIN jobs j ON j.id = m.job_id
     WHERE m.session_id = :session_id AND j.created_at <= :upto_created
     ORDER BY j.created_at, j.id = :upto_job, m.seq
    """
)
_MESSAGES = OneStatement(MESSAGES_SQL)


def ordered_messages(
    db: Session | Engine, *, session_id: uuid.UUID, upto_job: Job
) -> list[Message]:
    """The session history a job sees: earlier jobs' messages, then its own
    (detached ``Message`` objects: the runtime reads them and appends new ones)."""
    params = {
        "session_id": session_id,
        "upto_created": upto_job.created_at,
        "upto_job": upto_job.id,
    }
    return [Message(**row._asdict()) for row in rows_of(db, _MESSAGES, params)]


def to_model_messages(system_prompt: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The chat-completions message list, using what the model saw where that differs."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    pending: list[str] = []
    for m in messages:
        if m.role != "tool" and pending:
            # An earlier job ended between a tool request and its result; the
            # chat format requires an answer for every call, so say so.
            out.extend(_missing_result(call_id) for call_id in pending)
            pending = []
        content = m.model_content if m.model_content is not None else m.content
        if m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": content}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in m.tool_calls
                ]
                pending = [c["id"] for c in m.tool_calls]
            out.append(item)
        elif m.role == "tool":
            if m.tool_call_id in pending:
                pending.remove(m.tool_call_id)
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": content or ""})
        else:
            out.append({"role": m.role, "content": content or ""})
    return out


def _missing_result(call_id: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "(no result: the job ended before this tool call completed)",
    }
