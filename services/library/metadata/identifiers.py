"""Identifiers and years found in a paper's text: DOI, arXiv id (new style
``2101.00001v2`` and old style ``hep-th/9901001``), PubMed id, year.

Pure functions over strings, shared by extraction and the benchmark.
"""

from __future__ import annotations

import re

DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)
# "arXiv:2101.00001v2", "arxiv.org/abs/2101.00001", old style "arXiv:hep-th/9901001".
ARXIV_NEW = re.compile(r"arxiv(?:\.org/(?:abs|pdf)/|:)\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.I)
ARXIV_OLD = re.compile(
    r"arxiv(?:\.org/(?:abs|pdf)/|:)\s*([a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.I
)
ARXIV_FILENAME = re.compile(r"^(\d{4}\.\d{4,5})(?:v\d+)?\.pdf$", re.I)
PMID = re.compile(r"\bPMID:?\s*(\d{5,9})\b")
YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
PDF_DATE = re.compile(r"^D:(\d{4})")


def find_doi(text: str) -> str | None:
    m = DOI.search(text)
    if not m:
        return None
    return m.group(1).rstrip(".,;:)]}").lower()


def find_arxiv(text: str) -> str | None:
    """The first arXiv id in ``text``, without its version (versions are one paper)."""
    found = [m for m in (ARXIV_NEW.search(text), ARXIV_OLD.search(text)) if m]
    if not found:
        return None
    first = min(found, key=lambda m: m.start())
    return first.group(1)


def arxiv_from_filename(name: str | None) -> str | None:
    m = ARXIV_FILENAME.match((name or "").rsplit("/", 1)[-1])
    return m.group(1) if m else None


def arxiv_year(arxiv_id: str) -> int | None:
    """The submission year in an arXiv id: ``2101.00001`` → 2021, ``hep-th/9901001`` → 1999."""
    digits = arxiv_id.rsplit("/", 1)[-1]
    if not digits[:2].isdigit():
        return None
    yy, mm = int(digits[:2]), int(digits[2:4])
    if not 1 <= mm <= 12:
        return None
    if "/" in arxiv_id:
        return 1900 + yy if yy >= 91 else 2000 + yy
    return 2000 + yy if yy >= 7 else None


def find_pmid(text: str) -> str | None:
    m = PMID.search(text)
    return m.group(1) if m else None


def pdf_year(date: str | None) -> int | None:
    m = PDF_DATE.match(date or "")
    if not m:
        return None
    year = int(m.group(1))
    return year if 1950 <= year <= 2100 else None


def find_year(text: str) -> int | None:
    m = YEAR.search(text)
    return int(m.group(1)) if m else None
