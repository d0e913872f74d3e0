"""``POST /v1/library/imports`` with a JSON body: import a Zotero library.

The body is ``{"zotero": {"user" | "group": <id>, "key": "<API key>"}, "project"?,
"collection"?}``. The library is read here (services/api/library/zotero.py, in a
thread: seconds of network) into the same parsed bibliography a file gives, so
the import rows and the ``library.import`` task are the file import's own. The
key lives only in this request: it is not written to the import, its entries or
the log; a Zotero refusal becomes a finished import whose ``error`` says why.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from services.api.library.zotero import (
    ZoteroFailed,
    ZoteroLibrary,
    ZoteroLimits,
    read_zotero,
)
from services.common.bibliography import ParsedBibliography
from services.common.contracts.errors import ServiceError
from services.common.documents.settings import IntakeSettings
from services.common.net_guard import NetGuard, parse_allow_list

SHAPE = '{"zotero": {"user" | "group": <id>, "key": "<API key>"}, "project"?, "collection"?}'
MAX_KEY_CHARS = 200

ZOTERO_BODY: dict[str, Any] = {
    "schema": {
        "type": "object",
        "required": ["zotero"],
        "additionalProperties": False,
        "properties": {
            "zotero": {
                "type": "object",
                "required": ["key"],
                "additionalProperties": False,
                "properties": {
                    "user": {"type": "integer", "minimum": 1},
                    "group": {"type": "integer", "minimum": 1},
                    "key": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_KEY_CHARS,
                        "pattern": "^[A-Za-z0-9]+$",
                    },
                },
                "description": "one of user or group; the key is used once, never stored",
            },
            "project": {"type": "string", "maxLength": 200},
            "collection": {"type": "string", "enum": ["lab"]},
        },
    }
}


@dataclass(frozen=True)
class ZoteroRequest:
    library: ZoteroLibrary
    key: str
    project: str | None
    collection: str | None


def parse_zotero_body(body: Any) -> ZoteroRequest:
    """The request, or a 400 naming the expected shape (the key never echoed)."""
    zotero = body.get("zotero") if isinstance(body, dict) else None
    if not isinstance(zotero, dict):
        raise ServiceError(400, "invalid_request", f"JSON body must be {SHAPE}")
    kinds = [k for k in ("user", "group") if k in zotero]
    if len(kinds) != 1:
        raise ServiceError(400, "invalid_request", 'give exactly one of "user" or "group"')
    ident = zotero[kinds[0]]
    if isinstance(ident, str) and ident.isdigit():
        ident = int(ident)
    if not isinstance(ident, int) or isinstance(ident, bool) or ident < 1:
        raise ServiceError(400, "invalid_request", f"the Zotero {kinds[0]} id is a positive number")
    key = zotero.get("key")
    if (
        not isinstance(key, str)
        or not key.isalnum()
        or not key.isascii()
        or len(key) > MAX_KEY_CHARS
    ):
        raise ServiceError(
            400,
            "invalid_request",
            "the Zotero API key is letters and digits (zotero.org/settings/keys)",
        )
    project, collection = body.get("project"), body.get("collection")
    for name, value in (("project", project), ("collection", collection)):
        if value is not None and not isinstance(value, str):
            raise ServiceError(400, "invalid_request", f"{name} must be a string")
    kind: Literal["user", "group"] = "user" if kinds[0] == "user" else "group"
    return ZoteroRequest(ZoteroLibrary(kind, ident), key, project, collection)


async def read_requested(
    request: ZoteroRequest, intake: IntakeSettings
) -> tuple[ParsedBibliography, str | None]:
    """The library's entries, or an empty bibliography and the reason Zotero refused."""
    limits = ZoteroLimits(intake.zotero_url, intake.zotero_timeout_s, intake.zotero_max_wait_s)
    guard = NetGuard(parse_allow_list(intake.web_allow))
    try:
        parsed = await asyncio.to_thread(
            read_zotero, request.library, key=request.key, guard=guard, limits=limits
        )
    except ZoteroFailed as exc:
        return ParsedBibliography("zotero", []), str(exc)
    return parsed, None
