"""One collection's HNSW graph over int8 vectors (usearch), labels as keys.

Why int8: the float32 vectors inside hnswlib were 1.5 GB per million chunks,
a second full-precision copy beside Edge's (which keeps the originals on
disk). The graph now holds one byte per dimension; the store rescores the
graph's candidates exactly from Edge's vectors (``edge.py``), so the order it
answers with is exact cosine over those candidates.

Why each vector is scaled by its own largest component: cosine ignores a
vector's length, so every vector may use the whole int8 range (a fixed scale
leaves a 384-d unit vector's components at ±10 of ±127). The same scaling of
an int8 vector gives it back unchanged, so a saved vector re-inserted (a
replayed delta, ``ann_saved.py``) is bit-identical.

usearch releases the GIL while it inserts and searches, as hnswlib did: the
builder thread grows the graphs while searches and ingestion go on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from usearch.index import Index, ScalarKind

# Candidates the graph gives beyond what was asked, for the exact rescoring to
# reorder: int8 distances can swap neighbours whose cosines differ by < ~1%.
RESCORE_MARGIN = 10


def quantise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled so that each one's largest |component| is 127, rounded to int8."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    peak = np.abs(rows).max(axis=1, keepdims=True)
    scale = np.divide(127.0, peak, out=np.zeros_like(peak), where=peak > 0)
    return np.rint(rows * scale).astype(np.int8)


class QuantisedGraph:
    """An int8 HNSW graph keyed by label; callers serialise access (``Graph.lock``)."""

    def __init__(self, dimension: int, m: int, ef_construction: int) -> None:
        self.dimension = dimension
        self.m = m
        self.index = Index(
            ndim=dimension,
            metric="cos",
            dtype="i8",
            connectivity=m,
            expansion_add=ef_construction,
        )

    def add(self, labels: list[int], vectors: np.ndarray, threads: int = 1) -> None:
        """Insert float vectors (quantised here) or int8 ones (taken as they are)."""
        rows = vectors if vectors.dtype == np.int8 else quantise(vectors)
        self.index.add(np.asarray(labels, dtype=np.uint64), rows, threads=threads)

    def remove(self, label: int) -> None:
        self.index.remove(label)  # an absent label is a no-op

    def get(self, label: int) -> np.ndarray | None:
        """The int8 vector a live label holds (None: removed or never added)."""
        got = self.index.get(label, dtype="i8")
        return None if got is None else np.asarray(got, dtype=np.int8)

    def search(self, query: np.ndarray, k: int, ef: int) -> list[tuple[int, float]]:
        """``(label, approximate cosine)`` best first; fewer than ``k`` if the graph is small."""
        if self.index.expansion_search != ef:
            self.index.expansion_search = ef  # type: ignore[misc]  # mypy misreads the setter
        found = self.index.search(quantise(query)[0], k, threads=1)
        return [
            (int(key), 1.0 - float(d)) for key, d in zip(found.keys, found.distances, strict=True)
        ]

    def __len__(self) -> int:
        return len(self.index)

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    @classmethod
    def load(cls, path: Path, dimension: int, m: int, ef_construction: int) -> QuantisedGraph:
        """A saved graph; ValueError when it was made for another setup,
        RuntimeError (from usearch) when the file is unreadable."""
        graph = cls(dimension, m, ef_construction)
        graph.index.load(str(path))
        made = graph.index
        if made.ndim != dimension or made.connectivity != m or made.dtype != ScalarKind.I8:
            raise ValueError(f"graph made for {made.ndim} dimensions, M {made.connectivity}")
        return graph
