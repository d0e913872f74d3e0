"""The PyTorch backend: sentence-transformers on CPU or CUDA (the reference)."""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from services.library.embedding.base import Embedder

log = logging.getLogger(__name__)


class TorchEmbedder(Embedder):
    backend = "torch"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            device = self.device
            if device == "auto":
                import torch

                device = "cuda" if torch.cuda.is_available() else "cpu"
                log.info("embedding: torch on %s", device)
            model = SentenceTransformer(self.model_name, device=device)
            model.max_seq_length = self.max_seq_length
            self._model = model
        return self._model

    @property
    def dimension(self) -> int:
        return int(self._load().get_embedding_dimension())

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        vectors = self._load().encode(
            texts,
            batch_size=len(texts),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
