"""The API's client of the library service: a safe internal path, and one request
whose answer becomes the public model, the service's own error, or a 503.

Reads, searches and deletes go through here; the library service re-derives the
caller's collections from the acting user the headers name (``access.headers()``).
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from services.api.state import AppState
from services.common.contracts.errors import ServiceError, error_body
from services.common.telemetry import ainject_httpx_request

PROXY_TIMEOUT_S = 60.0


def internal_path(*segments: str) -> str:
    """A library-service path from segments, none of which may walk elsewhere.

    Path parameters arrive percent-decoded (``%2E%2E`` is ``..``); a segment
    that is a dot segment or carries a separator is refused, not forwarded.
    """
    for segment in segments:
        if segment in ("", ".", "..") or any(c in segment for c in "/\\?#%"):
            raise ServiceError(404, "not_found", "not found")
    return "/" + "/".join(segments)


async def forward(
    state: AppState, method: str, path: str, model: type[BaseModel] | None, **kwargs: Any
) -> Any:
    """The library service's answer: ``model`` from a 200, an empty 204 (``model``
    None), its error body and status otherwise; 503 when it cannot be reached."""
    try:
        async with httpx.AsyncClient(
            base_url=state.settings.library_url,
            timeout=PROXY_TIMEOUT_S,
            event_hooks={"request": [ainject_httpx_request]},
        ) as client:
            resp = await client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise ServiceError(
            503, "library_unavailable", f"library service unreachable ({type(exc).__name__})"
        ) from None
    if model is None and resp.status_code == 204:
        return Response(status_code=204)
    try:
        body = resp.json()
    except ValueError:
        body = error_body("library_error", resp.text[:500])
    if resp.status_code != 200 or model is None:
        return JSONResponse(body, status_code=resp.status_code)
    return model.model_validate(body)
