"""What a search hit *is*: ``text``, ``table`` or ``caption``.

The store's payload ``kind`` is the chunker's finer kind (``text``,
``environment``, ``reference``, ``caption``, ``table``; chunks indexed before
this field was written carry ``para``, and some none). The public kind folds
it: ``table`` and ``caption`` are themselves, everything else — a missing
kind included — reads as ``text``.

Searches narrowed to one kind are services/library/scope.py's.
"""

from __future__ import annotations

from typing import Any

from services.library.store.base import SPECIAL_KINDS

KINDS: tuple[str, ...] = ("text", "table", "caption")


def public_kind(payload_kind: Any) -> str:
    """The public kind of a stored chunk's payload ``kind``."""
    return str(payload_kind) if payload_kind in SPECIAL_KINDS else "text"


def matches(payload: dict[str, Any], kind: str) -> bool:
    return public_kind(payload.get("kind")) == kind
