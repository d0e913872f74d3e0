"""API service settings."""

from __future__ import annotations

from services.common.settings import CommonSettings


class ApiSettings(CommonSettings):
    host: str = "127.0.0.1"
    port: int = 8000
    sse_ping_s: float = 15.0
