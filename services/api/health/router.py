"""Liveness with each dependency's state."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from services.api.deps import StateDep

router = APIRouter(tags=["health"])


class HealthOut(BaseModel):
    status: str  # "ok" | "degraded"
    dependencies: dict[str, str]  # name -> "ok" | "error: <class>"


@router.get(
    "/healthz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "A dependency is down"}},
)
async def healthz(state: StateDep) -> JSONResponse:
    deps: dict[str, str] = {}

    def _db() -> None:
        with state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    try:
        await asyncio.wait_for(asyncio.to_thread(_db), timeout=3)
        deps["database"] = "ok"
    except Exception as exc:
        deps["database"] = f"error: {type(exc).__name__}"
    try:
        await asyncio.wait_for(state.aredis.ping(), timeout=3)
        deps["redis"] = "ok"
    except Exception as exc:
        deps["redis"] = f"error: {type(exc).__name__}"
    ok = all(v == "ok" for v in deps.values())
    body = HealthOut(status="ok" if ok else "degraded", dependencies=deps)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)
