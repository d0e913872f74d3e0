"""Every request the research tools send, through the one address guard.

Search APIs and user-chosen pages alike go through
:func:`services.common.net_guard.fetch` (checked at connect time and on every
redirect, capped in size and time), and every way a request can fail becomes
one structured :class:`ToolError` whose ``retryable`` says whether the same
request may succeed later (timeouts, unreachable hosts, 429 and 5xx answers).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from services.common.net_guard import AddressRefused, FetchFailed, InvalidUrl, NetGuard, fetch
from services.worker.tools.base import ToolError

USER_AGENT = "Leaflab/1.0 (research agent; +https://github.com/leaflab)"


def fetch_error(exc: AddressRefused, *, what: str) -> ToolError:
    """The tool error for a refused or failed fetch of ``what`` (a URL or a service name)."""
    if isinstance(exc, InvalidUrl):  # a redirect to a broken URL, say: the form, not policy
        return ToolError("invalid_url", f"{what}: {exc}", category="validation")
    if not isinstance(exc, FetchFailed):
        return ToolError("url_refused", f"{what}: {exc}", category="security")
    details: dict[str, Any] = {"status": exc.status} if exc.status is not None else {}
    categories = {"timeout": "timeout", "unreachable": "network", "too_large": "limit"}
    return ToolError(
        exc.code,
        f"{what}: {exc}",
        category=categories.get(exc.code, "upstream"),
        retryable=exc.retryable,
        details=details,
    )


def get_json(
    url: str,
    *,
    guard: NetGuard,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    service: str,
    max_bytes: int,
    timeout_s: float,
) -> Any:
    """GET a JSON API answer through the guard; failures name ``service``."""
    query = {k: v for k, v in (params or {}).items() if v is not None}
    full = f"{url}?{urlencode(query)}" if query else url
    sent = {"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
    try:
        body = fetch(full, guard=guard, max_bytes=max_bytes, timeout_s=timeout_s, headers=sent)
    except AddressRefused as exc:
        raise fetch_error(exc, what=service) from None
    try:
        return json.loads(body)
    except ValueError:
        raise ToolError(
            "bad_response",
            f"{service} answered something that is not JSON",
            category="upstream",
            retryable=True,
        ) from None
