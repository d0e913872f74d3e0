"""Started sign-ins in Redis: ``state`` → the nonce, the PKCE verifier and where to go.

A record is used at most once (taken with GETDEL) and lives a few minutes, so a
callback URL replayed later, or the same one twice, finds nothing. Redis keeps
only ``sha256(state)``, like the session store: the state travels in URLs.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass

import redis

from services.common.contracts import keys

PENDING_TTL_S = 600
MAX_STATE_CHARS = 128


@dataclass(frozen=True)
class PendingSignIn:
    nonce: str
    code_verifier: str
    next_url: str


def _redis_key(state: str) -> str:
    return keys.oidc_pending(hashlib.sha256(state.encode()).hexdigest())


class PendingSignIns:
    def __init__(self, client: redis.Redis, ttl_s: int = PENDING_TTL_S) -> None:
        self._redis = client
        self._ttl_s = ttl_s

    def begin(self, *, next_url: str) -> tuple[str, PendingSignIn]:
        """A fresh state (for the URL and the browser's cookie) and its record."""
        state = secrets.token_urlsafe(32)
        pending = PendingSignIn(
            nonce=secrets.token_urlsafe(32),
            # RFC 7636: 43-128 characters; 64 random bytes give 86.
            code_verifier=secrets.token_urlsafe(64),
            next_url=next_url,
        )
        self._redis.set(_redis_key(state), json.dumps(asdict(pending)), ex=self._ttl_s)
        return state, pending

    def take(self, state: str) -> PendingSignIn | None:
        """The record of ``state``, removed in the same step; None if unknown, used or expired."""
        if not state or len(state) > MAX_STATE_CHARS:
            return None
        raw = self._redis.getdel(_redis_key(state))
        if raw is None:
            return None
        try:
            return PendingSignIn(**json.loads(raw))
        except (TypeError, ValueError):
            return None
