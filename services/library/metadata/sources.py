"""The two metadata services a document is looked up in, read into one shape.

OpenAlex: ``/works/doi:{doi}`` (an arXiv id is asked as its DataCite DOI,
``10.48550/arXiv.{id}``, which is how OpenAlex files preprints) and
``/works?filter=title.search:…``. Crossref: ``/works/{doi}`` and
``/works?query.bibliographic=…``. Every request goes through the address guard
(services/common/net_guard.py), capped in size and time; a failure raises
:class:`LookupFailed` with a reason fit for a log line, and "this service has
no such work" is ``None`` / ``[]``, never an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from services.common.net_guard import AddressRefused, FetchFailed, NetGuard, fetch
from services.common.works.openalex import normalise_doi, normalise_title, parse_work

MAX_ANSWER_BYTES = 2_000_000
USER_AGENT = "Leaflab/1.0 (library metadata lookup)"
ARXIV_DOI_PREFIX = "10.48550/arxiv."
TITLE_CANDIDATES = 5


class LookupFailed(Exception):
    """The service could not be asked or gave no usable answer (timeout, status, body)."""


@dataclass(frozen=True)
class FoundWork:
    """One service's record of a work: the fields it fills, and whether it was retracted."""

    source: str  # "openalex" | "crossref"
    title: str | None
    authors: list[str]
    year: int | None
    venue: str | None
    doi: str | None
    arxiv_id: str | None
    retracted: bool
    # Where an open-access copy of the full text is (OpenAlex's open_access.oa_url);
    # not a document field: a bibliography import fetches it (imports/open_access.py).
    oa_url: str | None = None

    def fields(self) -> dict[str, Any]:
        """The non-empty document fields (services/library/metadata/apply.py FIELDS)."""
        values = {
            "title": self.title,
            "authors": self.authors,
            "year": self.year,
            "venue": self.venue,
            "doi": self.doi,
            "arxiv_id": self.arxiv_id,
        }
        return {k: v for k, v in values.items() if v not in (None, "", [])}


@dataclass(frozen=True)
class JsonClient:
    """GET JSON through the guard; 404 is "none", anything unusable :class:`LookupFailed`."""

    base: str
    guard: NetGuard
    timeout_s: float
    service: str

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any | None:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        url = self.base.rstrip("/") + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        try:
            body = fetch(
                url,
                guard=self.guard,
                max_bytes=MAX_ANSWER_BYTES,
                timeout_s=self.timeout_s,
                headers=headers,
            )
        except FetchFailed as exc:
            if exc.status == 404:
                return None
            raise LookupFailed(f"{self.service}: {exc}") from None
        except AddressRefused as exc:
            raise LookupFailed(f"{self.service}: {exc}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise LookupFailed(f"{self.service} answered something that is not JSON") from None


def _arxiv_from_doi(doi: str | None) -> str | None:
    return doi[len(ARXIV_DOI_PREFIX) :] if doi and doi.startswith(ARXIV_DOI_PREFIX) else None


def _search_words(title: str) -> str:
    # Commas and colons are OpenAlex filter syntax; the match itself is strict later.
    return normalise_title(title)


class OpenAlexSource:
    name = "openalex"

    def __init__(self, client: JsonClient, *, mailto: str | None, api_key: str | None) -> None:
        self._client = client
        self._extra = {"mailto": mailto, "api_key": api_key}

    def _work(self, raw: Any) -> FoundWork:
        if not isinstance(raw, dict) or not (raw.get("id") or raw.get("display_name")):
            raise LookupFailed("OpenAlex answered a body that is not a work")
        work = parse_work(raw)
        return FoundWork(
            source=self.name,
            title=work.title or None,
            authors=work.authors,
            year=work.year,
            venue=work.venue,
            doi=work.doi,
            arxiv_id=_arxiv_from_doi(work.doi),
            retracted=work.is_retracted,
            oa_url=work.oa_url if (work.oa_url or "").startswith(("http://", "https://")) else None,
        )

    def by_doi(self, doi: str) -> FoundWork | None:
        raw = self._client.get(f"/works/doi:{quote(doi, safe='/:()')}", self._extra)
        return None if raw is None else self._work(raw)

    def by_arxiv(self, arxiv_id: str) -> FoundWork | None:
        return self.by_doi(f"{ARXIV_DOI_PREFIX}{arxiv_id}")

    def by_title(self, title: str) -> list[FoundWork]:
        params = {
            "filter": f"title.search:{_search_words(title)}",
            "per_page": TITLE_CANDIDATES,
            **self._extra,
        }
        answer = self._client.get("/works", params)
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise LookupFailed("OpenAlex answered a search without results")
        return [self._work(r) for r in results if isinstance(r, dict)]


_YEAR = re.compile(r"^\d{4}$")


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return " ".join(value.split()) if isinstance(value, str) and value.strip() else None


def _crossref_year(message: dict[str, Any]) -> int | None:
    for key in ("published", "published-print", "published-online", "issued"):
        parts = (message.get(key) or {}).get("date-parts") or [[None]]
        year = parts[0][0] if parts and parts[0] else None
        if isinstance(year, int) and _YEAR.match(str(year)):
            return year
    return None


class CrossrefSource:
    name = "crossref"

    def __init__(self, client: JsonClient, *, mailto: str | None) -> None:
        self._client = client
        self._extra = {"mailto": mailto}

    def _work(self, message: Any) -> FoundWork:
        if not isinstance(message, dict) or not message.get("DOI"):
            raise LookupFailed("Crossref answered a body that is not a work")
        authors = []
        for person in message.get("author") or []:
            if isinstance(person, dict):
                name = " ".join(str(person.get(k) or "") for k in ("given", "family")).strip()
                if name or person.get("name"):
                    authors.append(name or str(person["name"]))
        doi = normalise_doi(str(message["DOI"]))
        # The retracted work carries the notice that retracts it under "updated-by"
        # (Crossref's Retraction Watch records, 2023 on).
        updates = message.get("updated-by") or []
        retracted = any(isinstance(u, dict) and u.get("type") == "retraction" for u in updates)
        return FoundWork(
            source=self.name,
            title=_first(message.get("title")),
            authors=authors,
            year=_crossref_year(message),
            venue=_first(message.get("container-title")),
            doi=doi,
            arxiv_id=_arxiv_from_doi(doi),
            retracted=retracted,
        )

    def _message(self, answer: Any) -> Any:
        if not isinstance(answer, dict) or "message" not in answer:
            raise LookupFailed("Crossref answered a body without a message")
        return answer["message"]

    def by_doi(self, doi: str) -> FoundWork | None:
        answer = self._client.get(f"/works/{quote(doi, safe='/()')}", self._extra)
        return None if answer is None else self._work(self._message(answer))

    def by_arxiv(self, arxiv_id: str) -> FoundWork | None:
        return None  # arXiv DOIs are DataCite's, not Crossref's

    def by_title(self, title: str) -> list[FoundWork]:
        params = {"query.bibliographic": title, "rows": TITLE_CANDIDATES, **self._extra}
        items = (self._message(self._client.get("/works", params)) or {}).get("items")
        if not isinstance(items, list):
            raise LookupFailed("Crossref answered a search without items")
        return [self._work(i) for i in items if isinstance(i, dict)]
