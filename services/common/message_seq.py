"""Allocating a session's next message number.

One UPDATE … RETURNING both locks the session row and hands out the number,
so concurrent writers (the API adding a turn, a worker adding a reply) get
distinct, ordered seqs in a single round trip.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.orm import Session

NEXT_SEQ_SQL = text(
    "UPDATE sessions SET message_seq = message_seq + 1, updated_at = now() "
    "WHERE id = :id RETURNING message_seq"
)


def next_message_seq(db: Session, session_id: uuid.UUID) -> int:
    seq = db.execute(NEXT_SEQ_SQL, {"id": session_id}).scalar_one_or_none()
    if seq is None:
        raise LookupError(f"session {session_id} does not exist")
    return int(seq)
