"""The handlers that turn every failure of a Leaflab HTTP service into the one error
shape of ``contracts.errors``: raised :class:`ServiceError`, a request FastAPI
could not validate, a value Postgres cannot store, and Starlette's own 404/405."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from services.common.contracts.errors import ServiceError, error_body

log = logging.getLogger(__name__)

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(_: Request, exc: ServiceError) -> JSONResponse:
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
