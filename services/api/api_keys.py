"""API keys: made once, stored as salted hashes, found by a visible prefix.

A key is ``lf_`` + 256 random bits (URL-safe). The plaintext is returned once
by :func:`issue_key` and never stored. A row keeps ``prefix`` (the first
characters, shown in listings and indexed), a random per-row ``salt`` and
``sha256(salt || key)``. Checking a presented key is one indexed query (by
prefix, or by the legacy unsalted hash) followed by a constant-time
comparison, so a timing probe learns nothing about stored hashes.

Keys stored before salts existed (``salt`` NULL, ``key_hash = sha256(key)``)
keep working unchanged; admins rotate them by issuing a new key and revoking
the old one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from services.common.models import ApiKey, User

KEY_PREFIX = "lf_"
PREFIX_CHARS = 10  # "lf_" + 7 random characters: shown in listings, used for lookup
# Writing last_used_at on every request would make each request a row write
# (and a row lock that concurrent requests with the same key queue behind).
LAST_USED_RESOLUTION = timedelta(minutes=1)
# Where the request's Caller is kept on its DB session (``Session.info``).
CALLER_INFO = "leaflab.caller"


class KeyRefused(Exception):
    """The presented key cannot be used; the message says why (shown to the caller)."""


@dataclass(frozen=True)
class Caller:
    """Who a request acts as: the user, the key used, and the project it is limited to."""

    user: User
    key_id: uuid.UUID
    project_id: uuid.UUID | None


def legacy_hash(key: str) -> str:
    """The unsalted SHA-256 of keys stored before salts existed."""
    return hashlib.sha256(key.encode()).hexdigest()


def salted_hash(key: str, salt: str) -> str:
    return hashlib.sha256(salt.encode() + key.encode()).hexdigest()


def issue_key(
    db: Session,
    *,
    user: User,
    name: str | None = None,
    project_id: uuid.UUID | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A new key row and its plaintext, which is never stored and shown only once."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    row = ApiKey(
        user_id=user.id,
        key_hash=salted_hash(key, salt),
        salt=salt,
        prefix=key[:PREFIX_CHARS],
        name=name,
        project_id=project_id,
        expires_at=expires_at,
    )
    db.add(row)
    db.flush()
    return row, key


def _matches(row: ApiKey, key: str) -> bool:
    expected = legacy_hash(key) if row.salt is None else salted_hash(key, row.salt)
    return hmac.compare_digest(row.key_hash, expected)


def authenticate(db: Session, *, key: str, now: datetime | None = None) -> Caller:
    """The caller a presented key stands for; :class:`KeyRefused` if it is unknown,
    revoked, expired, or its user is disabled."""
    when = now or datetime.now(UTC)
    rows = db.execute(
        select(ApiKey, User)
        .join(User, User.id == ApiKey.user_id)
        .where(or_(ApiKey.prefix == key[:PREFIX_CHARS], ApiKey.key_hash == legacy_hash(key)))
    ).all()
    found = next((r for r in rows if _matches(r.ApiKey, key)), None)
    if found is None:
        raise KeyRefused("invalid API key")
    return _caller(db, found.ApiKey, found.User, when)


def authenticate_key_id(db: Session, *, key_id: uuid.UUID, now: datetime | None = None) -> Caller:
    """The caller a stored key id stands for (a browser session remembers the key's id,
    never the key): the same checks as :func:`authenticate`, so revoking the key ends
    its browser sessions too."""
    found = db.execute(
        select(ApiKey, User).join(User, User.id == ApiKey.user_id).where(ApiKey.id == key_id)
    ).first()
    if found is None:
        raise KeyRefused("this API key no longer exists")
    return _caller(db, found.ApiKey, found.User, now or datetime.now(UTC))


def _caller(db: Session, row: ApiKey, user: User, when: datetime) -> Caller:
    if row.revoked_at is not None:
        raise KeyRefused("this API key was revoked")
    if row.expires_at is not None and row.expires_at <= when:
        raise KeyRefused("this API key has expired")
    if user.disabled:
        raise KeyRefused("this user is disabled")
    if row.last_used_at is None or row.last_used_at < when - LAST_USED_RESOLUTION:
        db.execute(update(ApiKey).where(ApiKey.id == row.id).values(last_used_at=when))
    return Caller(user=user, key_id=row.id, project_id=row.project_id)
