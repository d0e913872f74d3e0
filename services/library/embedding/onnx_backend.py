"""The ONNX Runtime backend (fp32 or int8): tokenizers + one session, mean
pooling and normalisation in numpy, CUDA when onnxruntime offers it."""

from __future__ import annotations

import logging
import os
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


def usable_cpus() -> int:
    """Cores this process may run on (its affinity mask, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def session_options(
    *, threads: int, inter_op_threads: int, optimization: str, execution: str
) -> Any:
    """onnxruntime's options from the settings; 0 threads = one per usable core."""
    import onnxruntime as ort

    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or usable_cpus()
    if inter_op_threads:  # only used by the parallel execution mode
        options.inter_op_num_threads = inter_op_threads
    options.graph_optimization_level = levels[optimization]
    parallel = execution == "parallel"
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    return options


class OnnxEmbedder(Embedder):
    def __init__(
        self,
        *,
        models_dir: Path,
        int8: bool = False,
        threads: int = 0,
        inter_op_threads: int = 0,
        optimization: str = "all",
        execution: str = "sequential",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.models_dir = models_dir
        self.int8 = int8
        self.threads = threads
        self.inter_op_threads = inter_op_threads
        self.optimization = optimization
        self.execution = execution
        self.backend = "onnx-int8" if int8 else "onnx"
        self._session: Any = None
        self._tokenizer: Any = None
        self._counter: Any = None
        self._inputs: set[str] = set()

    def _load(self) -> Any:
        if self._session is None:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            check_mean_pooling(self.model_name)
            path = ensure_exported(self.models_dir, self.model_name, int8=self.int8)
            options = session_options(
                threads=self.threads,
                inter_op_threads=self.inter_op_threads,
                optimization=self.optimization,
                execution=self.execution,
            )
            providers = pick_providers(self.device)
            session = ort.InferenceSession(str(path), options, providers=providers)
            log.info("embedding: %s on %s (%s)", self.backend, session.get_providers()[0], path)
            tokenizer = Tokenizer.from_file(str(Path(self.model_name) / "tokenizer.json"))
            tokenizer.enable_truncation(self.max_seq_length)
            # The same tokenizer without padding counts each text's own length.
            self._counter = Tokenizer.from_str(tokenizer.to_str())
            self._counter.no_padding()  # tokenizer.json may pad to a fixed length
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

    def lengths(self, texts: list[str]) -> list[int]:
        """Word pieces per text (truncated to the window): what a batch pads to."""
        self._load()
        return [len(e.ids) for e in self._counter.encode_batch(texts)]

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
