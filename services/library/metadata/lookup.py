"""Look a library document up after extraction: OpenAlex, else Crossref.

Guarantees:
- the order is: by DOI, then by arXiv id, then by title; OpenAlex first, and
  Crossref only where OpenAlex found nothing (or could not be asked);
- a title matches only when its normal form (services/common/works/openalex.py
  ``normalise_title``) equals the document's: never a search's "best hit";
- :meth:`MetadataLookup.find` never raises for the services' sake: a timeout,
  an error status, a body that is not the expected JSON or no match gives
  ``None``, and each failure is logged with the service and the reason;
- nothing is asked when lookups are off (``LEAFLAB_METADATA_LOOKUP=false``) or
  when the address guard refuses the OpenAlex URL (see :func:`build_lookup`).
"""

from __future__ import annotations

import logging
from typing import Protocol
from urllib.parse import urlsplit

from services.common.net_guard import AddressRefused, NetGuard, check_url
from services.common.works.openalex import normalise_title
from services.library.metadata.sources import (
    CrossrefSource,
    FoundWork,
    JsonClient,
    LookupFailed,
    OpenAlexSource,
)
from services.library.settings import LibrarySettings

log = logging.getLogger(__name__)
# Shorter normal forms ("introduction", "5 discussion") name sections, not papers.
MIN_TITLE_CHARS = 20


class Source(Protocol):
    name: str

    def by_doi(self, doi: str) -> FoundWork | None: ...
    def by_arxiv(self, arxiv_id: str) -> FoundWork | None: ...
    def by_title(self, title: str) -> list[FoundWork]: ...


class MetadataLookup:
    def __init__(self, sources: list[Source]) -> None:
        self._sources = sources

    def find(
        self, *, doi: str | None, arxiv_id: str | None, title: str | None, document: str
    ) -> FoundWork | None:
        """The first service's record of this document, or None (logged why)."""
        for source in self._sources:
            try:
                found = _ask(source, doi=doi, arxiv_id=arxiv_id, title=title)
            except LookupFailed as exc:
                log.warning("library.lookup: document %s: %s", document, exc)
                continue
            except Exception as exc:  # a body of an unexpected shape: never the document's fault
                name = type(exc).__name__
                log.warning(
                    "library.lookup: document %s: %s unreadable (%s)", document, source.name, name
                )
                continue
            if found is not None:
                log.info("library.lookup: document %s found in %s", document, source.name)
                return found
        log.info("library.lookup: document %s: no record found", document)
        return None


def _ask(
    source: Source, *, doi: str | None, arxiv_id: str | None, title: str | None
) -> FoundWork | None:
    if doi:
        found = source.by_doi(doi)
        if found is not None:
            return found
    if arxiv_id:
        found = source.by_arxiv(arxiv_id)
        if found is not None:
            return found
    wanted = normalise_title(title or "")
    if len(wanted) < MIN_TITLE_CHARS:
        return None
    # Strict: the same words in the same order, or no match.
    return next((w for w in source.by_title(title or "") if _same_title(w, wanted)), None)


def _same_title(work: FoundWork, wanted: str) -> bool:
    return bool(work.title) and normalise_title(work.title or "") == wanted


def _reachable(guard: NetGuard, url: str) -> str | None:
    """Why the guard would refuse ``url``, or None when it may be asked."""
    try:
        check_url(url)
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        guard.resolve(parts.hostname or "", port)
    except AddressRefused as exc:
        return str(exc)
    return None


def build_lookup(settings: LibrarySettings, guard: NetGuard) -> MetadataLookup | None:
    """The lookup this process runs, or None when off (the reason is logged once)."""
    if not settings.metadata_lookup:
        log.info("library.lookup: off (LEAFLAB_METADATA_LOOKUP=false)")
        return None
    refused = _reachable(guard, settings.openalex_base_url)
    if refused:
        log.warning("library.lookup: off, the OpenAlex URL cannot be asked: %s", refused)
        return None
    timeout = settings.metadata_lookup_timeout_s
    openalex = OpenAlexSource(
        JsonClient(settings.openalex_base_url, guard, timeout, "OpenAlex"),
        mailto=settings.openalex_mailto,
        api_key=settings.openalex_api_key,
    )
    crossref = CrossrefSource(
        JsonClient(settings.crossref_base_url, guard, timeout, "Crossref"),
        mailto=settings.openalex_mailto,
    )
    return MetadataLookup([openalex, crossref])
