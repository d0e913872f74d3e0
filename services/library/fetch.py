"""Fetch a URL document into the file store through the shared address guard
(services/common/net_guard.py: every hop, the address actually connected to)."""

from __future__ import annotations

from services.common.documents.blobs import BlobStore
from services.common.net_guard import NetGuard, check_url, fetch_to

__all__ = ["check_url", "fetch_document"]  # check_url: what the URL route refuses at once


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
