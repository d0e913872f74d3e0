"""Build the configured embedder (backend, device, models directory)."""

from __future__ import annotations

from pathlib import Path

from services.library.embedding.base import Embedder
from services.library.embedding.onnx_backend import OnnxEmbedder
from services.library.embedding.torch_backend import TorchEmbedder
from services.library.settings import LibrarySettings


def build_embedder(
    *,
    backend: str,
    model: str | None,
    device: str,
    batch_size: int,
    max_seq_length: int,
    models_dir: Path,
    threads: int = 0,
    inter_op_threads: int = 0,
    optimization: str = "all",
    execution: str = "sequential",
    length_buckets: bool = True,
) -> Embedder:
    """``backend`` is torch, onnx or onnx-int8; ONNX files are exported into
    ``models_dir`` on first use (a few seconds, once per machine)."""
    common = {
        "model": model,
        "device": device,
        "batch_size": batch_size,
        "max_seq_length": max_seq_length,
        "length_buckets": length_buckets,
    }
    if backend == "torch":
        return TorchEmbedder(**common)
    if backend in ("onnx", "onnx-int8"):
        return OnnxEmbedder(
            models_dir=models_dir,
            int8=backend == "onnx-int8",
            threads=threads,
            inter_op_threads=inter_op_threads,
            optimization=optimization,
            execution=execution,
            **common,
        )
    raise ValueError(f"unknown embedding backend {backend!r}: torch, onnx or onnx-int8")


def embedder_from_settings(settings: LibrarySettings, *, backend: str | None = None) -> Embedder:
    return build_embedder(
        backend=backend or settings.embedding_backend,
        model=settings.embedding_model,
        device=settings.embedding_device,
        batch_size=settings.embedding_batch_size,
        max_seq_length=settings.embedding_max_seq_length,
        models_dir=settings.resolved_models_dir,
        threads=settings.embedding_threads,
        inter_op_threads=settings.embedding_inter_op_threads,
        optimization=settings.embedding_graph_optimization,
        execution=settings.embedding_execution_mode,
        length_buckets=settings.embedding_length_buckets,
    )
