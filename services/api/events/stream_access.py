"""Open event streams re-check who is reading them, and end when access ends.

A stream is authorised when it opens; without a re-check a key revoked mid-stream
would keep receiving events for as long as the connection lives. So every
``sse_access_check_s`` (and at least at each ping) the stream runs the request's
authentication again — the bearer key or the browser session cookie it came
with: revoked, expired, user disabled, session logged out — and the route's own
visibility rule for its object (the key's project scope, current project
membership). The first refusal ends the stream with one ``access_revoked``
event saying why; nothing after it is sent.

An infrastructure error during the check (database briefly unreachable) is not
a refusal: the stream keeps going and asks again at the next check.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from fastapi import Request
from sqlalchemy.orm import Session

from services.api.api_keys import CALLER_INFO, Caller
from services.api.deps import authenticate_request, bearer_token
from services.api.state import AppState
from services.common.contracts.errors import ServiceError

log = logging.getLogger(__name__)

REVOKED_EVENT = "access_revoked"

# Raises ServiceError when the caller may no longer read the stream's object.
ObjectCheck = Callable[[Session, Caller], object]
AccessCheck = Callable[[], Awaitable[str | None]]


def stream_access(request: Request, state: AppState, check: ObjectCheck) -> AccessCheck:
    """An async check for ``follow``: None while the caller may still read, else why not."""

    async def still_allowed() -> str | None:
        return await asyncio.to_thread(_recheck, request, state, check)

    return still_allowed


def _recheck(request: Request, state: AppState, check: ObjectCheck) -> str | None:
    try:
        with state.session_factory() as db:
            try:
                caller = authenticate_request(request, bearer_token(request), db, state)
                db.info[CALLER_INFO] = caller  # the key's scope applies to the object check
                check(db, caller)
            except ServiceError as refused:
                return refused.message
            finally:
                db.rollback()  # read-only: nothing of the check (last_used_at) is kept
    except Exception:  # noqa: BLE001 - infrastructure, not a refusal: ask again next time
        log.warning("event stream: access re-check failed; retrying later", exc_info=True)
    return None
