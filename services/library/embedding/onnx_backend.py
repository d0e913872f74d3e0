"""The ONNX Runtime backend (fp32 or int8): tokenizers + one session, mean
pooling and normalisation in numpy, CUDA when onnxruntime offers it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from services.library.embedding.base import Embedder
from services.library.embedding.onnx_export import check_mean_pooling, ensure_exported

log = logging.getLogger(__name__)


def pick_providers(device: str) -> list[str]:
    """CUDA first when onnxruntime has it and the device setting allows it."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    if device in ("auto", "cuda") and "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "cuda":
        log.warning(
            "embedding: CUDA asked for but onnxruntime offers %s (install onnxruntime-gpu); "
            "using the CPU",
            available,
        )
    return ["CPUExecutionProvider"]


class OnnxEmbedder(Embedder):
    def __init__(self, *, models_dir: Path, int8: bool = False, threads: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.models_dir = models_dir
        self.int8 = int8
        self.threads = threads
        self.backend = "onnx-int8" if int8 else "onnx"
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()

    def _load(self) -> Any:
        if self._session is None:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            check_mean_pooling(self.model_name)
            path = ensure_exported(self.models_dir, self.model_name, int8=self.int8)
            options = ort.SessionOptions()
            if self.threads:
                options.intra_op_num_threads = self.threads
            providers = pick_providers(self.device)
            session = ort.InferenceSession(str(path), options, providers=providers)
            log.info("embedding: %s on %s (%s)", self.backend, session.get_providers()[0], path)
            tokenizer = Tokenizer.from_file(str(Path(self.model_name) / "tokenizer.json"))
            tokenizer.enable_truncation(self.max_seq_length)
            tokenizer.enable_padding()
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session
        return self._session

    @property
    def dimension(self) -> int:
        width = self._load().get_outputs()[0].shape[-1]
        if isinstance(width, int):
            return width
        return int(self.encode(["dimension probe"]).shape[1])

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        session = self._load()
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(pooled / norms, dtype=np.float32)
