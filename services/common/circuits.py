"""Where the model router keeps its circuit breakers in Redis (one hash per
endpoint and model), named once so the worker that writes them and the admin
dashboard that reads them agree."""

from __future__ import annotations

BREAKER_KEY_PREFIX = "leaflab:breaker:"


def breaker_key(endpoint: str, model: str) -> str:
    return f"{BREAKER_KEY_PREFIX}{endpoint}|{model}"


def split_breaker_key(key: str) -> tuple[str, str]:
    """(endpoint, model) of a breaker key; the model is after the last ``|``."""
    endpoint, _, model = key.removeprefix(BREAKER_KEY_PREFIX).rpartition("|")
    return endpoint, model
