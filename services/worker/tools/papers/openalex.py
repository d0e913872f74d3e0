"""OpenAlex works: search, DOI look-up, and the normalised shape the tools use.

Every request goes through the research tools' guarded client
(services/worker/tools/web/outbound.py), so a base URL on loopback works only
when ``LEAFLAB_WEB_ALLOW`` lists it, exactly like any other fetch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from services.common.works.openalex import Work, normalise_doi, normalise_title, parse_work
from services.worker.tools.base import ToolError
from services.worker.tools.web.outbound import get_json
from services.worker.tools.web.settings import ResearchToolSettings

__all__ = ["MAX_ANSWER_BYTES", "OpenAlex", "Work", "normalise_doi", "normalise_title", "parse_work"]

MAX_ANSWER_BYTES = 5_000_000


class OpenAlex:
    """The few OpenAlex calls the paper tools make."""

    def __init__(self, settings: ResearchToolSettings) -> None:
        self._settings = settings
        self._guard = settings.net_guard()
        self._base = settings.openalex_base_url.rstrip("/")

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        settings = self._settings
        extra = {"mailto": settings.openalex_mailto, "api_key": settings.openalex_api_key}
        return get_json(
            f"{self._base}{path}",
            guard=self._guard,
            params={**params, **extra},
            service="OpenAlex",
            max_bytes=MAX_ANSWER_BYTES,
            timeout_s=self._settings.web_fetch_timeout_s,
        )

    def search(
        self,
        query: str,
        *,
        limit: int,
        year_from: int | None = None,
        year_to: int | None = None,
        issns: Sequence[str] = (),
    ) -> list[Work]:
        filters = []
        if issns:  # works whose primary venue has one of these ISSNs ("|" is OpenAlex's OR)
            filters.append("primary_location.source.issn:" + "|".join(issns))
        if year_from is not None:
            filters.append(f"from_publication_date:{year_from}-01-01")
        if year_to is not None:
            filters.append(f"to_publication_date:{year_to}-12-31")
        answer = self._get(
            "/works",
            {"search": query, "per_page": limit, "filter": ",".join(filters) or None},
        )
        results = answer.get("results") if isinstance(answer, dict) else None
        return [parse_work(r) for r in results or [] if isinstance(r, dict)][:limit]

    def by_doi(self, doi: str) -> Work | None:
        """The work with this (normalised) DOI, or None when OpenAlex has none."""
        try:
            answer = self._get(f"/works/doi:{quote(doi, safe='/:')}", {})
        except ToolError as err:
            if err.details.get("status") == 404:
                return None
            raise
        return parse_work(answer) if isinstance(answer, dict) else None
