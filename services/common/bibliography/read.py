"""Which format a file is, and its entries: JSON (CSL-JSON or Better BibTeX JSON)
when it parses as JSON, BibTeX when it holds ``@type{`` blocks; anything else is
:class:`NotABibliography` with a message saying what was expected."""

from __future__ import annotations

import json
import re

from services.common.bibliography import better_bibtex, bibtex, csl_json
from services.common.bibliography.entry import NotABibliography, ParsedBibliography

MAX_ENTRIES = 10_000
BIBTEX_BLOCK = re.compile(r"@\s*[A-Za-z]+\s*[{(]")
MACRO_BLOCK = re.compile(r"@\s*(?:string|comment|preamble)\s*[{(]", re.I)
EXPECTED = "expected a BibTeX file (.bib), a CSL-JSON export or a Better BibTeX JSON export"


def read_bibliography(raw: bytes) -> ParsedBibliography:
    """The file's entries in order (unusable ones as Skipped with a reason)."""
    if raw.lstrip()[:5] == b"%PDF-":
        raise NotABibliography(f"a PDF, not a bibliography (add PDFs as documents); {EXPECTED}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # old .bib files; JSON is always UTF-8
    if "\x00" in text:
        raise NotABibliography(f"the file is binary; {EXPECTED}")
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        parsed = _json(stripped)
    elif BIBTEX_BLOCK.search(text):
        # Counted before parsing (about 600 entries/s): a huge file is refused at once.
        _check_count(len(BIBTEX_BLOCK.findall(text)) - len(MACRO_BLOCK.findall(text)))
        parsed = bibtex.parse(text)
    else:
        raise NotABibliography(f"no BibTeX entry (@article{{…}}) and not JSON; {EXPECTED}")
    if not parsed.items:
        raise NotABibliography(f"the file holds no entries; {EXPECTED}")
    _check_count(len(parsed.items))
    return parsed


def _check_count(entries: int) -> None:
    if entries > MAX_ENTRIES:
        raise NotABibliography(
            f"the file holds {entries} entries; import at most {MAX_ENTRIES} at a time"
        )


def _json(text: str) -> ParsedBibliography:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise NotABibliography(f"not valid JSON ({exc}); {EXPECTED}") from None
    if better_bibtex.looks_like(data):
        return better_bibtex.parse(data)
    if csl_json.looks_like(data):
        return csl_json.parse(data)
    raise NotABibliography(
        "JSON, but neither CSL-JSON (a list of items with a type) nor Better BibTeX JSON "
        '(an object with "items" carrying "itemType")'
    )
