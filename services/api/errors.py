"""The API's side of the one error shape (``services.common.contracts.errors``): the
OpenAPI ``responses=`` that declare it per route, and the uniform 404."""

from __future__ import annotations

from typing import Any

from services.common.contracts.errors import ErrorBody, ServiceError

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


def not_found(what: str) -> ServiceError:
    # Another user's object is indistinguishable from a missing one.
    return ServiceError(404, "not_found", f"{what} not found")
