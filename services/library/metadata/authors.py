"""Author names from a PDF's ``author`` field or from the lines between the
title and the abstract on the first page.

Layout names are read word by word (PyMuPDF word boxes): a name ends at a
comma, an "and", a footnote mark (†, ∗, superscript digits or Greek letters),
a gap wider than a space, or a line's end — unless it has one word so far (a
name wrapped onto the next line). Groups that read as affiliations, e-mail
addresses or countries are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_AUTHORS = 50
AFFILIATION = re.compile(
    r"\b(univ|universit|institut|department|dept|school|college|laborator|lab\b|labs\b|center|"
    r"centre|research|inc\b|corp|company|technolog|academy|hospital|foundation|google|"
    r"microsoft|meta\b|bytedance|allen|ai2|email|e-mail|equal contribution|correspond|"
    r"science|abstract|preprint|review|conference|proceedings|workshop|http|www)",
    re.I,
)
COUNTRY = re.compile(
    r"^(USA|UK|U\.S\.A\.|China|Canada|Germany|France|Japan|India|Israel|Korea|Italy|Spain|"
    r"Switzerland|Netherlands|Australia|Singapore)$"
)
# "…, San Francisco, CA 94111": an address line (a state and a ZIP code).
ADDRESS = re.compile(r"\b[A-Z]{2},?\s+\d{5}\b")
PARTICLE = {"de", "van", "von", "der", "den", "di", "da", "la", "le", "del", "du", "bin", "al"}
MARK = re.compile(r"[†‡§¶∗*⋄♠♢♡♣♦□■○●⋆✉#]|\d|[α-ωΑ-Ω]")
# A word of a name: letters (any script), inner hyphens, apostrophes, an initial's period.
NAME_WORD = re.compile(r"^[^\W\d_][^\W\d_'’.\-]*(?:[-'’][^\W\d_]+)*\.?$|^[A-Z]\.(?:-?[A-Z]\.)*$")


def _clean_word(word: str) -> tuple[str, bool]:
    """The word without footnote marks, and whether a mark (a name's end) followed it."""
    text = word.strip()
    core = text
    while core and (MARK.match(core[-1]) or core[-1] in ",;:"):
        core = core[:-1]
    # Greek superscripts stuck to a name ("Loα", affiliation marks) are dropped above.
    ended = core != text
    core = core.lstrip("∗*†‡§¶⋄♠♢♡♣♦□")
    return core, ended


def _name(words: list[str]) -> str | None:
    words = [w for w in words if w]
    while words and COUNTRY.match(words[0]):
        words = words[1:]
    if not 2 <= len(words) <= 5:
        return None
    for w in words:
        if w.lower() in PARTICLE:
            continue
        if not NAME_WORD.match(w) or not w[0].isupper():
            return None
    name = " ".join(words)
    if AFFILIATION.search(name) or len(name) > 60:
        return None
    if name.isupper():  # ACM's "TAL AUGUST"
        return " ".join(w.capitalize() if w.isalpha() else w for w in words)
    if any(len(w) > 1 and w.isupper() and w.isalpha() for w in words):
        return None  # "REL ChemProt": a table's row, not a person
    return name


def names_from_words(lines: Iterable[list[tuple[float, float, float, str]]]) -> list[str]:
    """Names from lines of words ``(x0, x1, height, text)`` in reading order."""
    names: list[str] = []
    current: list[str] = []

    def close() -> None:
        nonlocal current
        name = _name(current)
        if name and name not in names:
            names.append(name)
        current = []

    for line in lines:
        if ADDRESS.search(" ".join(w[3] for w in line)):
            close()
            continue
        previous_x1: float | None = None
        for x0, x1, height, raw in line:
            # A space is ~0.25 em; authors are set apart by a quad or more.
            if previous_x1 is not None and x0 - previous_x1 > height * 0.6:
                close()
            previous_x1 = x1
            if raw.lower() in ("and", "&") or raw == ",":
                close()
                continue
            if "@" in raw or raw.startswith(("{", "(")):
                close()
                continue
            word, ended = _clean_word(raw)
            if word:
                current.append(word)
            if ended:
                close()
        if len(current) != 1:  # one word: a name wrapped onto the next line
            close()
    close()
    return names[:MAX_AUTHORS]


def names_from_field(field: str | None) -> list[str]:
    """Names from a PDF ``author`` field ("A B ; C D", "A B, C D and E F")."""
    text = (field or "").strip()
    if not text or len(text) > 2000:
        return []
    parts = re.split(r"\s*(?:;|,|\band\b|&)\s*", text)
    names = []
    for part in parts:
        name = _name(part.split())
        if name and name not in names:
            names.append(name)
    return names[:MAX_AUTHORS]
