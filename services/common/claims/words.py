"""Claim and passage text as the checks see it: content stems, numbers, named terms.

Stems come from the Snowball English stemmer the library's BM25 uses, so
"inhibits" and "inhibition" meet; stop words and a few hedging words every
scientific sentence carries ("associated", "increase" stay: they carry content).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

from services.common.ligatures import fold_ligatures

WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*|[0-9]+[a-z]+[a-z0-9]*")
# A number: 1,000 / 3.5 / 10 / .5 — percent signs and units are dropped, the value kept.
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?![\d])")
# A named term: an acronym or gene-like token (BRCA1, IL-6, PrP, mRNA) or a capitalised
# word not at the sentence's start.
TERM = re.compile(
    r"\b(?:[A-Za-z]*[A-Z][A-Za-z]*[0-9]+[A-Za-z0-9-]*|[a-z]*[A-Z]{2,}[A-Za-z0-9-]*"
    r"|[A-Z][a-z]+[A-Z][A-Za-z0-9]*)\b"
)
STOPWORDS = frozenset(
    "a an and are as at be been being but by for from had has have he her his i if in into is it "
    "its of on or our she so such than that the their them then there these they this those to "
    "was we were what when where which while who will with would you your not no can do does "
    "did also may might both either each more most less other some any all only very via "
    "using used use based study studies show shows shown found find result results".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def plain(text: str) -> str:
    """Ligatures folded (services.common.ligatures), then NFKC (full-width digits,
    non-breaking spaces): so "eﬃcient" and "efficient" are one word. Used only to
    compare, never to rewrite a text anyone reads."""
    return unicodedata.normalize("NFKC", fold_ligatures(text))


def content_stems(text: str) -> set[str]:
    """The stems of the words that carry content (no stop words, no bare numbers)."""
    words = [w for w in WORD.findall(plain(text).lower()) if w not in STOPWORDS and len(w) > 1]
    parts = [p for w in words for p in ([w, *w.split("-")] if "-" in w else [w])]
    stems: list[str] = _stemmer().stemWords(parts)
    return set(stems)


def numbers(text: str) -> set[float]:
    """Every number written in digits, as a value (``1,000`` and ``1000`` are one)."""
    found: set[float] = set()
    for raw in NUMBER.findall(plain(text)):
        try:
            found.add(float(raw.replace(",", "")))
        except ValueError:  # pragma: no cover - the pattern only matches numerals
            continue
    return found


def named_terms(text: str) -> set[str]:
    """Acronyms and gene- or product-like names, lower-cased for comparison."""
    return {t.lower() for t in TERM.findall(plain(text))}
