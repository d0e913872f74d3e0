"""Browser sessions in Redis: an opaque cookie token → the API key's id and a CSRF token.

The cookie never holds the API key. Redis keeps only ``sha256(token)``, so a read of
Redis does not yield usable cookies. A session remembers the key's *id*: each request
re-checks that key (revoked, expired, user disabled end the session at once).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass

import redis

from services.common.contracts import keys

TOKEN_BYTES = 32


@dataclass(frozen=True)
class WebSession:
    key_id: uuid.UUID
    csrf: str


def _redis_key(token: str) -> str:
    return keys.web_session(hashlib.sha256(token.encode()).hexdigest())


class WebSessions:
    def __init__(self, client: redis.Redis, ttl_s: int) -> None:
        self._redis = client
        self._ttl_s = ttl_s

    def create(self, key_id: uuid.UUID) -> tuple[str, WebSession]:
        """A new session for ``key_id``: the cookie token (shown once) and the session."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        session = WebSession(key_id=key_id, csrf=secrets.token_urlsafe(TOKEN_BYTES))
        self._redis.hset(_redis_key(token), mapping={"key_id": str(key_id), "csrf": session.csrf})
        self._redis.expire(_redis_key(token), self._ttl_s)
        return token, session

    def lookup(self, token: str) -> WebSession | None:
        # A token of the wrong shape never reaches Redis as a key worth looking up.
        if not token or len(token) > 128:
            return None
        raw = self._redis.hgetall(_redis_key(token))
        if not raw:
            return None
        fields = {_text(k): _text(v) for k, v in raw.items()}
        try:
            return WebSession(key_id=uuid.UUID(fields["key_id"]), csrf=fields["csrf"])
        except (KeyError, ValueError):
            return None

    def delete(self, token: str) -> None:
        if token and len(token) <= 128:
            self._redis.delete(_redis_key(token))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
