"""Fetch a URL document into the file store through the shared address guard
(services/common/net_guard.py: every hop, the address actually connected to)."""

from __future__ import annotations

from urllib.parse import urlsplit

from services.common.documents.blobs import BlobStore
from services.common.net_guard import AddressRefused, NetGuard, check_host_literal, fetch_to

MAX_URL_CHARS = 2000


def check_url(url: str) -> None:
    """What can be refused before any network access: scheme, length, host form."""
    if len(url) > MAX_URL_CHARS:
        raise AddressRefused(f"the URL is longer than {MAX_URL_CHARS} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise AddressRefused("the URL contains control characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused("only http and https URLs can be ingested")
    check_host_literal(parts.hostname)


def fetch_document(
    url: str, *, store: BlobStore, key: str, guard: NetGuard, max_bytes: int, timeout_s: float
) -> None:
    """Download ``url`` to the blob ``key``; raises AddressRefused with a reason."""
    staged, out = store.staging()
    try:
        with out:
            fetch_to(url, out, guard=guard, max_bytes=max_bytes, timeout_s=timeout_s)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    store.commit(staged, key)
