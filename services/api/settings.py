"""API service settings."""

from __future__ import annotations

from services.common.settings import CommonSettings


class ApiSettings(CommonSettings):
    host: str = "127.0.0.1"
    port: int = 8000
    # SSE: a comment line at least this often, so proxies keep quiet streams open.
    sse_ping_s: float = 15.0
    max_turns_default: int = 30
    # Limits on what clients send.
    max_message_chars: int = 200_000
    max_request_bytes: int = 2_000_000
    # Every Redis call of the API fails after this long rather than hang; SSE
    # reads block for less (services.common.redis_client.max_block_ms).
    redis_socket_timeout_s: float = 5.0
    # Per-key token bucket in Redis, shared by every API process: on average
    # this many requests per second, up to ``rate_limit_burst`` at once (0: off).
    rate_limit_per_s: float = 20.0
    rate_limit_burst: int = 200
    # Browser sessions (the web pages): how long a login lasts.
    web_session_ttl_s: int = 12 * 3600
    # The Jaeger UI's base URL (e.g. http://jaeger:16686): job pages link each trace
    # there; unset, no link is shown.
    jaeger_ui_url: str | None = None
    # The model is Leaflab's simulator (`leaflab up` sets it when it serves one): the chat
    # page says its answers are simulated and how to connect a real model.
    model_simulated: bool = False
