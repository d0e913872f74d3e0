"""How a webhook delivery is signed, and how a receiver checks it.

``X-Leaflab-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">``
with the webhook's secret; ``X-Leaflab-Delivery: <id>`` is the same on every
retry of one notification, so a receiver that saw it already can drop it. The
timestamp is inside the signed text, so an old delivery replayed later fails a
receiver's freshness check (:func:`verify`'s ``tolerance_s``).
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Leaflab-Signature"
DELIVERY_HEADER = "X-Leaflab-Delivery"
EVENT_HEADER = "X-Leaflab-Event"


def signature(secret: str, body: bytes, *, at: int | None = None) -> str:
    """The header value for ``body`` signed at ``at`` (now by default)."""
    t = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def verify(
    secret: str, body: bytes, header: str, *, tolerance_s: float = 300, now: float | None = None
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance_s`` of now."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        t = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance_s:
        return False
    expected = signature(secret, body, at=t).split(",v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))
