"""An append-only disk cache of vectors for ``library eval`` and the benches."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from services.library.embedding.base import Embedder


class CachedEmbedder(Embedder):
    """Wraps an Embedder and keeps every vector it computes in an append-only
    disk cache (``keys.txt`` + ``vectors.f32``), keyed by the inner embedder's
    ``model_key`` and the text.

    Used by ``library eval`` and the SciFact bench, so retuning BM25 or fusion
    re-scores a corpus without re-embedding it. Never used by the service
    (which uses the Postgres hash cache, ``hash_cache``).
    """

    def __init__(self, cache_dir: Path, inner: Embedder) -> None:
        super().__init__(
            model=inner.model_name,
            device=inner.device,
            batch_size=inner.batch_size,
            max_seq_length=inner.max_seq_length,
            length_buckets=inner.length_buckets,
        )
        self.backend = inner.backend
        self.cache_dir = cache_dir
        self.inner = inner
        self._vectors: dict[str, np.ndarray] = {}
        self._load_cache()

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def lengths(self, texts: list[str]) -> list[int]:
        return self.inner.lengths(texts)

    @property
    def model_key(self) -> str:
        return self.inner.model_key

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.inner.encode(texts)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.inner.model_key}\0{text}".encode()).hexdigest()

    def _load_cache(self) -> None:
        keys_file, vec_file = self.cache_dir / "keys.txt", self.cache_dir / "vectors.f32"
        if not (keys_file.is_file() and vec_file.is_file()):
            return
        keys = keys_file.read_text().split()
        flat = np.fromfile(vec_file, dtype=np.float32)
        width = flat.size // max(1, len(keys))
        if not keys or width == 0:
            return
        rows = flat[: len(keys) * width].reshape(len(keys), width)
        self._vectors = dict(zip(keys, rows, strict=True))

    def _append(self, keys: list[str], vectors: np.ndarray) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        # Vectors first: a crash between the writes leaves an unused tail row,
        # never a key without its vector.
        with (self.cache_dir / "vectors.f32").open("ab") as fh:
            fh.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        with (self.cache_dir / "keys.txt").open("a") as fh:
            fh.write("".join(f"{k}\n" for k in keys))

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if todo:
            by_key = dict(zip(keys, texts, strict=True))
            fresh = self.inner.encode([by_key[k] for k in todo])
            self._append(todo, fresh)
            self._vectors.update(zip(todo, fresh, strict=True))
        if not keys:
            return self.inner.encode([])
        return np.stack([self._vectors[k] for k in keys])

    def encode_query(self, text: str) -> np.ndarray:
        return self.inner.encode_query(text)

    def warm(self, texts: list[str], *, group: int = 512) -> None:
        """Embed what the cache lacks in large groups (length-sorted batches
        inside each group waste less padding than one call per document)."""
        todo = list(dict.fromkeys(t for t in texts if self._key(t) not in self._vectors))
        for start in range(0, len(todo), group):
            self.encode(todo[start : start + group])
