"""A scholarly work as OpenAlex describes it, and the normal forms works are compared in.

Shared by the agent's paper tools (services/worker/tools/papers/) and the
library's metadata lookup (services/library/metadata/lookup.py): one parser of
OpenAlex's work object, so both read authors, venue and ``is_retracted`` alike.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import unquote

_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_DOI_PREFIXES = (
    "https://doi.org/",
    "http://doi.org/",
    "https://dx.doi.org/",
    "http://dx.doi.org/",
    "doi.org/",
    "doi:",
)


def normalise_doi(raw: str) -> str | None:
    """``https://doi.org/10.1000/ABC.`` → ``10.1000/abc``; None when it is no DOI.

    DOIs are case-insensitive; citations wrap them in URLs, ``doi:`` prefixes,
    percent-encoding and trailing punctuation, none of which is part of the DOI.
    """
    value = unquote(raw.strip()).strip()
    lowered = value.lower()
    for prefix in _DOI_PREFIXES:
        if lowered.startswith(prefix):
            value = value[len(prefix) :].strip()
            break
    value = value.rstrip(".,;)").lower()
    return value if _DOI.match(value) else None


def normalise_title(title: str) -> str:
    """Lower case, accents and punctuation gone, single spaces: for comparing titles."""
    text = unicodedata.normalize("NFKD", title)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text).split())


@dataclass(frozen=True)
class Work:
    openalex_id: str
    title: str
    doi: str | None
    year: int | None
    authors: list[str]
    venue: str | None
    cited_by_count: int
    is_retracted: bool
    oa_url: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One citation-like line for the model."""
        authors = ", ".join(self.authors[:4]) + (" et al." if len(self.authors) > 4 else "")
        parts = [f"{self.title} ({self.year or 'n.d.'})", authors or "unknown authors"]
        if self.venue:
            parts.append(self.venue)
        parts.append(f"doi:{self.doi}" if self.doi else "no DOI")
        parts.append(f"openalex:{self.openalex_id}")
        if self.is_retracted:
            parts.insert(0, "RETRACTED")
        return " | ".join(parts)


def parse_work(raw: dict[str, Any]) -> Work:
    """OpenAlex's work object → :class:`Work` (missing fields become empty)."""
    source = ((raw.get("primary_location") or {}).get("source")) or {}
    authors = [
        str(((a or {}).get("author") or {}).get("display_name") or "")
        for a in raw.get("authorships") or []
    ]
    doi = raw.get("doi")
    return Work(
        openalex_id=str(raw.get("id") or "").rsplit("/", 1)[-1],
        title=str(raw.get("display_name") or raw.get("title") or ""),
        doi=normalise_doi(doi) if isinstance(doi, str) else None,
        year=raw.get("publication_year") if isinstance(raw.get("publication_year"), int) else None,
        authors=[a for a in authors if a],
        venue=source.get("display_name"),
        cited_by_count=int(raw.get("cited_by_count") or 0),
        is_retracted=bool(raw.get("is_retracted")),
        oa_url=(raw.get("open_access") or {}).get("oa_url"),
    )
