"""The API's ``GET /metrics``: never open to whoever can reach the port.

A scrape is answered for the metrics token (``LEAFLAB_METRICS_TOKEN``, which
``leaflab up``'s Prometheus config sends when it is set) or for an admin's
unscoped API key; anything else is 401 (no or a wrong credential) or 403 (a
valid key that is not an admin's). Without a configured token only admins can
read the metrics — job counts, queue depths and per-route traffic of every
user on a shared host are not for every local account.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from services.api.api_keys import KeyRefused, authenticate
from services.api.deps import bearer_token
from services.api.state import AppState
from services.common.metrics.exposition import configured_token, metrics_response, token_matches


def _refusal(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _admin_key(request: Request) -> bool | None:
    """True for an admin's unscoped key, False for any other valid key, None for none."""
    key = bearer_token(request)
    if not key:
        return None
    state: AppState = request.app.state.leaflab
    with state.session_factory() as db:
        try:
            caller = authenticate(db, key=key)
            return caller.user.is_admin and caller.project_id is None
        except KeyRefused:
            return None
        finally:
            db.rollback()  # read-only: last_used_at is not worth a write per scrape


def mount_api_metrics(app: FastAPI) -> None:
    """Add the guarded ``GET /metrics`` (a plain function: Starlette's thread pool runs
    it, as the scrape-time collectors use blocking clients)."""
    token = configured_token()

    def endpoint(request: Request) -> Response:
        if token and token_matches(request.headers.get("authorization"), token):
            return metrics_response()
        admin = _admin_key(request)
        if admin:
            return metrics_response()
        if admin is False:
            return _refusal(403, "forbidden", "metrics are for admins and the metrics token")
        return _refusal(
            401,
            "unauthorized",
            "metrics need Authorization: Bearer with LEAFLAB_METRICS_TOKEN or an admin API key",
        )

    app.add_route("/metrics", endpoint, methods=["GET"], include_in_schema=False)
