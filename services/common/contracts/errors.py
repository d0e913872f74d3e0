"""The one JSON error shape every Leaflab HTTP service answers with, and its one exception.

``{"error": {"code", "message", "details"?}}``: the API, the library service and
the intake helpers they share raise :class:`ServiceError`; each service installs
the same handlers (``services.common.http_errors``), so a client (the CLI, the
library client, the browser) parses one shape whichever service refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ServiceError(Exception):
    """A refusal the caller should see: an HTTP ``status``, a stable ``code`` and a
    message without paths or secrets; ``details`` and ``headers`` are optional."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    """Every non-2xx answer of a Leaflab service."""

    error: ErrorDetail


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return {"error": body}
