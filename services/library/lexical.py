"""BM25 as sparse vectors: the document side carries BM25's saturated term
frequency, the store multiplies in IDF (Qdrant's ``Modifier.IDF``).

Terms are lower-cased, stop-word filtered, Snowball-stemmed and hashed to
31-bit ids, so no vocabulary has to be shared between processes.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

import Stemmer

TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be been but by for from had has have he her his i if in into is it "
    "its of on or our she so such than that the their them then there these they this those "
    "to was we were what when where which while who will with would you your not no can do "
    "does did also may might".split()
)


@dataclass(frozen=True)
class SparseVector:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class Bm25Params:
    k1: float = 0.9
    b: float = 0.4
    avg_len: float = 80.0
    title_weight: float = 1.0


class Bm25Encoder:
    def __init__(self, params: Bm25Params | None = None) -> None:
        self.params = params or Bm25Params()
        self._stemmer = Stemmer.Stemmer("english")

    def terms(self, text: str) -> list[str]:
        words = [w for w in TOKEN.findall(text.lower()) if w not in STOPWORDS]
        stems: list[str] = self._stemmer.stemWords(words)
        return stems

    @staticmethod
    def term_id(term: str) -> int:
        return zlib.crc32(term.encode()) & 0x7FFFFFFF

    def encode_document(self, text: str, *, title: str = "") -> SparseVector:
        """BM25 document weights; title terms count ``title_weight`` times."""
        p = self.params
        counts: Counter[str] = Counter(self.terms(text))
        if title and p.title_weight > 0:
            for term in self.terms(title):
                counts[term] += p.title_weight  # type: ignore[assignment]
        length = sum(counts.values())
        norm = p.k1 * (1 - p.b + p.b * length / p.avg_len)
        merged: dict[int, float] = {}
        for term, tf in counts.items():
            tid = self.term_id(term)
            merged[tid] = merged.get(tid, 0.0) + tf * (p.k1 + 1) / (tf + norm)
        indices = sorted(merged)
        return SparseVector(indices, [merged[i] for i in indices])

    def encode_query(self, text: str) -> SparseVector:
        counts = Counter(self.term_id(t) for t in self.terms(text))
        indices = sorted(counts)
        return SparseVector(indices, [float(counts[i]) for i in indices])
