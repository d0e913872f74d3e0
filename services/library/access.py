"""Who is calling: internal-token check and the caller's readable collections."""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse


class LibraryError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def response(self) -> JSONResponse:
        return JSONResponse(error_body(self.code, self.message), status_code=self.status)


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


@dataclass(frozen=True)
class Caller:
    user_id: uuid.UUID
    collections: list[str]


def caller(request: Request) -> Caller:
    token = request.app.state.runtime.settings.internal_token
    given = request.headers.get("x-leaflab-internal", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise LibraryError(401, "unauthorized", "missing or wrong X-Leaflab-Internal token")
    try:
        user_id = uuid.UUID(request.headers.get("x-leaflab-user", ""))
    except ValueError:
        raise LibraryError(400, "invalid_request", "X-Leaflab-User must be a user id") from None
    raw = request.headers.get("x-leaflab-collections", "")
    collections = [c.strip() for c in raw.split(",") if c.strip()]
    return Caller(user_id, collections)


CallerDep = Annotated[Caller, Depends(caller)]
