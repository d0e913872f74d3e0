"""BM25 as sparse vectors: the document side carries BM25's saturated term
frequency, the store multiplies in IDF (Qdrant's ``Modifier.IDF``).

Terms are lower-cased, stop-word filtered, Snowball-stemmed and hashed to
31-bit ids, so no vocabulary has to be shared between processes.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
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
    # "repeat": title terms are added to every chunk's own terms (one field);
    # "field": the title is a field of its own (own term ids, own length
    # normalisation over ``title_avg_len``), and a query term matches it with
    # ``title_weight`` times its weight, beside its match in the chunk text.
    title_mode: str = "repeat"
    title_avg_len: float = 11.0


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

    @staticmethod
    def title_term_id(term: str) -> int:
        """The title field's id of ``term`` (a namespace apart from body terms)."""
        return zlib.crc32(b"title\x00" + term.encode()) & 0x7FFFFFFF

    def _saturate(
        self, counts: Counter[str], avg_len: float, term_id: Callable[[str], int]
    ) -> dict[int, float]:
        p = self.params
        norm = p.k1 * (1 - p.b + p.b * sum(counts.values()) / avg_len)
        merged: dict[int, float] = {}
        for term, tf in counts.items():
            tid = term_id(term)
            merged[tid] = merged.get(tid, 0.0) + tf * (p.k1 + 1) / (tf + norm)
        return merged

    def encode_document(self, text: str, *, title: str = "") -> SparseVector:
        """BM25 document weights; the title per ``title_mode`` (see Bm25Params)."""
        p = self.params
        counts: Counter[str] = Counter(self.terms(text))
        field = p.title_mode == "field"
        if title and p.title_weight > 0 and not field:
            for term in self.terms(title):
                counts[term] += p.title_weight  # type: ignore[assignment]
        merged = self._saturate(counts, p.avg_len, self.term_id)
        if title and p.title_weight > 0 and field:
            titled = self._saturate(Counter(self.terms(title)), p.title_avg_len, self.title_term_id)
            for tid, value in titled.items():
                merged[tid] = merged.get(tid, 0.0) + value
        indices = sorted(merged)
        return SparseVector(indices, [merged[i] for i in indices])

    def encode_query(self, text: str) -> SparseVector:
        return self.query_from_terms(Counter(self.terms(text)))

    def query_from_terms(self, weights: Mapping[str, float]) -> SparseVector:
        """A query vector from term weights (the title field's ids added in "field" mode)."""
        p = self.params
        merged: dict[int, float] = {}
        for term, weight in weights.items():
            tid = self.term_id(term)
            merged[tid] = merged.get(tid, 0.0) + float(weight)
            if p.title_mode == "field" and p.title_weight > 0:
                tid = self.title_term_id(term)
                merged[tid] = merged.get(tid, 0.0) + p.title_weight * float(weight)
        indices = sorted(merged)
        return SparseVector(indices, [merged[i] for i in indices])
