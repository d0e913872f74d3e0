"""A Zotero library read through the Zotero web API v3, as a parsed bibliography.

``read_zotero`` pages through ``{base}/users/<id>/items/top`` (or ``/groups/<id>/…``)
in CSL-JSON (``format=csljson``, 100 items a page), following the ``Link: rel="next"``
header and checking the count against ``Total-Results``, and hands the items to the
same CSL-JSON reader a file export goes through, so a Zotero import is an ordinary
import from then on (idempotent, resumable, summarised).

Guarantees:
- the API key travels only in the ``Zotero-API-Key`` header of requests to the
  configured base URL: never in a URL, an error message, a log line or a row
  (the import records ``zotero user <id>`` and nothing else of the request); a
  ``next`` link to any other origin is refused, so a server cannot have the key
  sent elsewhere;
- every request goes through the outbound-address guard (services/common/net_guard.py);
- Zotero's ``Backoff`` and ``Retry-After`` (429, 503) are honoured, each wait at
  most ``zotero_max_wait_s`` and all of it within ``zotero_timeout_s``: past that
  the import fails saying so instead of hanging the request;
- a refusal (403: wrong key or no access, 404: no such library) is a
  :class:`ZoteroFailed` whose message says what to check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

import httpx

from services.common.bibliography import ParsedBibliography, csl_json
from services.common.bibliography.read import MAX_ENTRIES
from services.common.net_guard import AddressRefused, GuardedTransport, NetGuard, check_url

log = logging.getLogger(__name__)
PAGE_LIMIT = 100  # Zotero's largest page
MAX_TRIES_PER_PAGE = 5
MAX_PAGE_BYTES = 20_000_000
FORMAT = "zotero"


@dataclass(frozen=True)
class ZoteroLibrary:
    """Whose library: a user's or a group's, by its numeric id."""

    kind: Literal["user", "group"]
    id: int

    @property
    def label(self) -> str:
        """What the import records as its file name (no key, nothing secret)."""
        return f"zotero {self.kind} {self.id}"

    def items_url(self, base: str) -> str:
        query = urlencode({"format": "csljson", "limit": PAGE_LIMIT, "start": 0})
        return f"{base.rstrip('/')}/{self.kind}s/{self.id}/items/top?{query}"


@dataclass(frozen=True)
class ZoteroLimits:
    base_url: str
    timeout_s: float  # the whole read, waits included
    max_wait_s: float  # the longest single wait Zotero may ask for


class ZoteroFailed(Exception):
    """Zotero could not be read; the message is what the import shows (never the key)."""


def read_zotero(
    library: ZoteroLibrary,
    *,
    key: str,
    guard: NetGuard,
    limits: ZoteroLimits,
    sleep: Callable[[float], None] = time.sleep,
) -> ParsedBibliography:
    """Every top-level item of the library, in Zotero's order, as CSL-JSON entries."""
    deadline = time.monotonic() + limits.timeout_s
    headers = {"Zotero-API-Version": "3", "Zotero-API-Key": key, "Accept": "application/json"}
    items: list[Any] = []
    url: str | None = library.items_url(limits.base_url)
    pages = 0
    total: int | None = None
    with httpx.Client(transport=GuardedTransport(guard), timeout=30.0) as client:
        while url is not None:
            response = _get_page(client, url, headers, library, limits, deadline, sleep)
            pages += 1
            total = _total(response, total)
            items.extend(_page_items(response))
            if len(items) > MAX_ENTRIES:
                raise ZoteroFailed(f"the library holds over {MAX_ENTRIES} items; too many at once")
            url = _next_url(response, limits.base_url)
            _backoff(response, limits, deadline, sleep)
    if total is not None and len(items) < total:
        raise ZoteroFailed(f"Zotero listed {total} items but sent {len(items)}; try again")
    log.info("library: read %s (%d items in %d pages)", library.label, len(items), pages)
    if not items:
        raise ZoteroFailed(f"{library.label} holds no items")
    return ParsedBibliography(FORMAT, csl_json.parse(items).items)


def _get_page(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    library: ZoteroLibrary,
    limits: ZoteroLimits,
    deadline: float,
    sleep: Callable[[float], None],
) -> httpx.Response:
    """One page, retried while Zotero asks to wait (429, 503) and time is left."""
    for _ in range(MAX_TRIES_PER_PAGE):
        check_url(url)
        try:
            response = client.get(url, headers=headers)
            response.read()
        except AddressRefused as exc:
            raise ZoteroFailed(f"cannot reach Zotero: {exc}") from None
        except httpx.HTTPError as exc:
            raise ZoteroFailed(f"cannot reach Zotero ({type(exc).__name__})") from None
        if response.status_code == 200:
            if len(response.content) > MAX_PAGE_BYTES:
                raise ZoteroFailed("Zotero sent a page larger than 20 MB")
            return response
        if response.status_code in (429, 503):
            wait = _seconds(response.headers.get("retry-after")) or 5.0
            _wait(wait, limits, deadline, sleep, why=f"Zotero answered {response.status_code}")
            continue
        raise ZoteroFailed(_refusal(response.status_code, library))
    raise ZoteroFailed(f"Zotero kept answering 429/503 after {MAX_TRIES_PER_PAGE} tries; try later")


def _refusal(status: int, library: ZoteroLibrary) -> str:
    if status == 403:
        return (
            f"Zotero refused the API key (403 Forbidden): check the key, and that it "
            f"may read {library.kind} library {library.id}"
        )
    if status == 404:
        return f"Zotero has no {library.kind} library {library.id} (404 Not Found)"
    return f"Zotero answered {status} for {library.label}"


def _wait(
    seconds: float,
    limits: ZoteroLimits,
    deadline: float,
    sleep: Callable[[float], None],
    *,
    why: str,
) -> None:
    if seconds > limits.max_wait_s or time.monotonic() + seconds > deadline:
        raise ZoteroFailed(f"{why} and asked to wait {seconds:g} s; try again later")
    sleep(seconds)


def _backoff(
    response: httpx.Response, limits: ZoteroLimits, deadline: float, sleep: Callable[[float], None]
) -> None:
    """Zotero's ``Backoff: <s>`` on a good answer: wait that long before the next request."""
    seconds = _seconds(response.headers.get("backoff"))
    if seconds:
        _wait(seconds, limits, deadline, sleep, why="Zotero asked to back off")


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: rare from Zotero; the default wait applies


def _total(response: httpx.Response, previous: int | None) -> int | None:
    value = response.headers.get("total-results", "")
    return int(value) if value.isdigit() else previous


def _page_items(response: httpx.Response) -> list[Any]:
    try:
        data = response.json()
    except ValueError:
        raise ZoteroFailed("Zotero sent a page that is not JSON") from None
    items = data.get("items") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ZoteroFailed("Zotero sent a page that is not CSL-JSON")
    return items


def _next_url(response: httpx.Response, base: str) -> str | None:
    """The ``rel="next"`` link, only on the base URL's own origin (it gets the key)."""
    link = response.links.get("next")
    url = link.get("url") if link else None
    if not url:
        return None
    if _origin(url) != _origin(base):
        raise ZoteroFailed("Zotero's next-page link points elsewhere; refusing to follow it")
    return str(url)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port
