"""One error shape for every failure: {"error": {"code", "message"}}, declared in OpenAPI."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

log = logging.getLogger(__name__)

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.headers = headers
        self.status = status
        self.code = code
        self.message = message
        self.details = details


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    """Every non-2xx answer of the API."""

    error: ErrorDetail


_DESCRIPTIONS = {
    400: "Malformed request",
    401: "Missing, invalid or revoked API key",
    403: "Authenticated, but not allowed (admin only)",
    404: "Not found, or another user's object",
    405: "Method not allowed (see the Allow header)",
    409: "Conflicts with the object's current state",
    413: "Request body or a text field is too large",
    415: "Unsupported content type",
    422: "Invalid request: a field is missing, has the wrong type or is not allowed",
    429: "Too many requests",
    502: "An internal service answered with an error",
    503: "A dependency (database, Redis, library) is unavailable",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries for the given error statuses, all with :class:`ErrorBody`."""
    return {s: {"model": ErrorBody, "description": _DESCRIPTIONS[s]} for s in statuses}


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return {"error": body}


def not_found(what: str) -> ApiError:
    # Another user's object is indistinguishable from a missing one.
    return ApiError(404, "not_found", f"{what} not found")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details),
            status_code=exc.status,
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": e.get("msg", "")}
            for e in exc.errors()
        ]
        message = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:5])
        return JSONResponse(
            error_body("invalid_request", message or "invalid request", problems), 422
        )

    @app.exception_handler(DataError)
    async def _data_error(request: Request, exc: DataError) -> JSONResponse:
        # The last line of defence for a value Postgres cannot store (a NUL byte
        # in text, a number out of range) that validation let through: a 422,
        # never a 500. Logged by class only: the statement's parameters are the
        # user's data.
        log.warning(
            "refused a value the database cannot store on %s: %s",
            request.url.path,
            type(exc.orig).__name__,
        )
        return JSONResponse(
            error_body("invalid_request", "a value in the request cannot be stored"), 422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path.

    Starlette's own Allow header names only the first route that matched the
    path, and FastAPI makes one route per method, so GET and POST on
    ``/v1/jobs`` would be reported as POST alone. Routers may nest, so ask
    each top-level route whether it fully matches the path under each method.
    """
    allowed = []
    for method in HTTP_METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed
