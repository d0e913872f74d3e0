"""Who is calling: the internal token, the acting user, and the collections that
user may read, re-derived from the database on every request.

Callers (the API, agent workers) prove they are Leaflab services with the
internal token and name the acting user in X-Leaflab-User; which collections
that user may see is never taken from the request. A request may narrow the
set (``collection`` parameters) but never widen it.
"""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.db import transaction
from services.common.documents.collections import readable_collections
from services.library.runtime import LibraryRuntime


@dataclass(frozen=True)
class Caller:
    user_id: uuid.UUID
    collections: list[Collection]

    def narrowed(self, wanted: list[Collection]) -> list[str]:
        """Only the wanted collections the caller may read (all of them if none wanted)."""
        if not wanted:
            return list[str](self.collections)
        return [c for c in self.collections if c in set(wanted)]


def get_runtime(request: Request) -> LibraryRuntime:
    runtime: LibraryRuntime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[LibraryRuntime, Depends(get_runtime)]


def caller(request: Request, runtime: RuntimeDep) -> Caller:
    token = runtime.settings.internal_token
    given = request.headers.get("x-leaflab-internal", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise ServiceError(401, "unauthorized", "missing or wrong X-Leaflab-Internal token")
    try:
        user_id = uuid.UUID(request.headers.get("x-leaflab-user", ""))
    except ValueError:
        raise ServiceError(400, "invalid_request", "X-Leaflab-User must be a user id") from None
    with transaction(runtime.session_factory) as db:
        collections = readable_collections(db, user_id)
    if collections is None:
        raise ServiceError(403, "forbidden", "X-Leaflab-User is not an active user")
    return Caller(user_id, collections)


CallerDep = Annotated[Caller, Depends(caller)]
