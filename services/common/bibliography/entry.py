"""One bibliography entry, whatever file it came from, and the identifiers it is matched by.

Every parser (``bibtex``, ``csl_json``, ``better_bibtex``) yields :class:`Entry`
values in file order, with :class:`Skipped` in place of an entry it could not
read (and why), so an import reports every entry of the file. Identifiers are
normalised here, once: a DOI lower-case without its resolver prefix, an arXiv
id without ``arXiv:`` or its version, a title folded for matching.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

# What a DOI field may hold around the DOI itself.
DOI_IN = re.compile(r"(10\.\d{4,9}/\S+)", re.I)
# arXiv's own DOIs (10.48550/arXiv.2101.00001) name an arXiv id.
ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.I)
ARXIV_ID = re.compile(
    r"(?:arxiv(?:\.org/(?:abs|pdf)/|:\s*|\s+)|^)"
    r"(\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?",
    re.I,
)
PDF_URL = re.compile(r"^https?://\S+\.pdf(?:[?#]\S*)?$", re.I)
YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d|2100)\b")
MAX_TITLE_CHARS = 1000
MAX_AUTHORS = 100
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Entry:
    """What becomes (or matches) a library document."""

    title: str
    key: str | None = None  # the file's citation key, kept for export
    entry_type: str = "misc"
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pdf_url: str | None = None  # an http(s) URL of an open-access PDF the file names

    def norm_title(self) -> str:
        return normalise_title(self.title)

    def identity(self) -> str:
        """What makes two entries the same paper: DOI, else arXiv id, else title."""
        if self.doi:
            return f"doi:{self.doi}"
        if self.arxiv_id:
            return f"arxiv:{self.arxiv_id}"
        return f"title:{self.norm_title()}"

    def content_key(self) -> str:
        """The document's content hash when it is kept without a PDF (one per collection)."""
        return hashlib.sha256(b"bib:" + self.identity().encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Skipped:
    """An entry the parser could not use; ``reason`` is what the summary shows."""

    reason: str
    key: str | None = None


@dataclass
class ParsedBibliography:
    format: str  # "bibtex", "csl-json" or "better-bibtex-json"
    items: list[Entry | Skipped]

    @property
    def entries(self) -> list[Entry]:
        return [i for i in self.items if isinstance(i, Entry)]

    @property
    def skipped(self) -> list[Skipped]:
        return [i for i in self.items if isinstance(i, Skipped)]


class NotABibliography(ValueError):
    """The file is not BibTeX, CSL-JSON or Better BibTeX JSON; the message says why."""


def normalise_title(text: str) -> str:
    """Lower-case letters and digits separated by single spaces (accents folded),
    the same folding the library uses for reference titles."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", folded.replace("-", "")).split())


def clean_text(value: Any, limit: int = MAX_TITLE_CHARS) -> str | None:
    """One line of printable text, or None when nothing is left."""
    if not isinstance(value, str | int):
        return None
    text = " ".join(str(value).replace("{", "").replace("}", "").split())
    text = "".join(c for c in text if not unicodedata.category(c).startswith("C"))
    return text[:limit] or None


def clean_doi(value: Any) -> str | None:
    match = DOI_IN.search(value) if isinstance(value, str) else None
    return match.group(1).rstrip(".,;)").lower()[:300] if match else None


def clean_arxiv(value: Any) -> str | None:
    """An arXiv id from an ``eprint`` / ``arXiv:`` / arxiv.org URL / arXiv DOI value."""
    if not isinstance(value, str):
        return None
    doi = ARXIV_DOI.match(value.strip())
    match = ARXIV_ID.search(doi.group(1) if doi else value.strip())
    return match.group(1) if match else None


def pdf_url(value: Any) -> str | None:
    """``value`` when it is an http(s) URL of a ``.pdf`` (a local file path never is)."""
    if isinstance(value, str) and PDF_URL.match(value.strip()) and len(value) <= 2000:
        return value.strip()
    return None


def clean_year(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1500 <= value <= 2100 else None
    match = YEAR.search(value) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def clean_authors(names: list[str]) -> list[str]:
    cleaned = [n for n in (clean_text(name, MAX_NAME_CHARS) for name in names) if n]
    return cleaned[:MAX_AUTHORS]


def make_entry(*, title: Any, key: Any, **fields: Any) -> Entry | Skipped:
    """An Entry from already-extracted fields, or Skipped when it has no title."""
    key_text = clean_text(key, 200)
    text = clean_text(title)
    if not text:
        return Skipped("the entry has no title", key_text)
    return Entry(title=text, key=key_text, **fields)
