"""API service settings."""

from __future__ import annotations

from services.common.settings import CommonSettings


class ApiSettings(CommonSettings):
    host: str = "127.0.0.1"
    port: int = 8000
    library_url: str = "http://127.0.0.1:8200"
    # Shared secret the API presents to internal services (library) it proxies to.
    internal_token: str = "leaflab-internal-dev-token"
    sse_ping_s: float = 15.0
