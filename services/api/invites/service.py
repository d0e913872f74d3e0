"""Making and redeeming invites.

A token is shown once (in the link) and stored only as its SHA-256. Redeeming is
one ``UPDATE … WHERE used_at IS NULL AND expires_at > now() RETURNING``: of two
clicks on the same link at the same moment exactly one gets the user back, and an
expired or used link is refused the same way, without saying which.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from services.common.models import Invite, User

TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 100

REDEEM_SQL = text(
    """
    UPDATE invites SET used_at = now()
     WHERE token_hash = :hash AND used_at IS NULL AND expires_at > now()
    RETURNING user_id
    """
)


class InviteRefused(Exception):
    """The link is unknown, used, expired, or its user is disabled."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_invite(
    db: Session, *, user: User, created_by: uuid.UUID | None, hours: int
) -> tuple[Invite, str]:
    """A new invite for ``user`` and its token (never stored, shown only once)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    invite = Invite(
        user_id=user.id,
        token_hash=token_hash(token),
        created_by=created_by,
        expires_at=datetime.now(UTC) + timedelta(hours=hours),
    )
    db.add(invite)
    db.flush()
    return invite, token


def redeem(db: Session, token: str) -> User:
    """Use the invite up (in the caller's transaction) and return its user."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise InviteRefused
    user_id = db.execute(REDEEM_SQL, {"hash": token_hash(token)}).scalar()
    user = db.get(User, user_id) if user_id is not None else None
    if user is None or user.disabled:
        raise InviteRefused
    return user


def is_open(db: Session, token: str) -> bool:
    """Whether the link would still work (the page's GET: it never uses the invite up,
    so a mail scanner that opens links cannot burn it)."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return False
    found = db.execute(
        text(
            "SELECT 1 FROM invites i JOIN users u ON u.id = i.user_id"
            " WHERE i.token_hash = :hash AND i.used_at IS NULL AND i.expires_at > now()"
            " AND NOT u.disabled"
        ),
        {"hash": token_hash(token)},
    ).first()
    return found is not None
