"""Citation keys (``scibert2019pretrained``): first author's surname when known,
else the title's first word, then the year and the title's first significant
word, unique among the keys already ``taken``. One rule for the survey's
references and the library's BibTeX export.
"""

from __future__ import annotations

import re
import unicodedata

STOPWORDS = frozenset(
    "a an the of on in for and to with from by towards toward via using is are what how".split()
)


def ascii_words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return [w.lower() for w in re.findall(r"[A-Za-z0-9]+", plain)]


def make_key(*, title: str, authors: list[str], year: int | None, taken: set[str]) -> str:
    """A readable, unique key for one paper; ``taken`` gains it."""
    words = [w for w in ascii_words(title) if w not in STOPWORDS] or ["paper"]
    surname = ascii_words(authors[0])[-1:] if authors else []
    head = surname[0] if surname else words[0]
    tail = words[1] if not surname and len(words) > 1 else words[0]
    base = f"{head}{year or 'nd'}{tail if tail != head else ''}"[:40]
    key, n = base, 0
    while key in taken:
        n += 1
        key = f"{base}{chr(ord('a') + n - 1)}" if n <= 26 else f"{base}{n}"
    taken.add(key)
    return key
