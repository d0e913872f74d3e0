"""Liveness with the store's size (the API's /healthz asks here)."""

from __future__ import annotations

from fastapi import APIRouter

from services.library.access import RuntimeDep
from services.library.schemas import DenseIndexStatus, Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
def healthz(runtime: RuntimeDep) -> Health:
    dense = runtime.store.dense_index_status()
    return Health(
        status="ok",
        chunks=runtime.store.count(),
        dense_index=None if dense is None else DenseIndexStatus(**dense),
    )
