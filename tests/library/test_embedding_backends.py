"""The ONNX backends compute the same vectors as the PyTorch reference
(fp32 near-identical, int8 close), from the packaged weights, exported once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from services.library.embedding import OnnxEmbedder, TorchEmbedder, build_embedder
from services.library.embedding.onnx_export import export_dir

SCIFACT = Path("/work/shared/data/scifact/corpus.jsonl")


def _sample_texts(n: int = 48) -> list[str]:
    """Real abstracts when the shared data is here, else varied sentences."""
    if SCIFACT.is_file():
        with SCIFACT.open() as fh:
            docs = [json.loads(next(fh)) for _ in range(n)]
        return [f"{d['title']}. {d['text']}" for d in docs]
    base = "Gene expression in the mouse liver changes after fasting"
    return [" ".join([base] * (1 + i % 9)) + f" sample {i}" for i in range(n)]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return TorchEmbedder(device="cpu", max_seq_length=256).encode(_sample_texts())


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_onnx_fp32_matches_torch(models_dir: Path, reference: np.ndarray) -> None:
    onnx = OnnxEmbedder(models_dir=models_dir, device="cpu", max_seq_length=256)
    vectors = onnx.encode(_sample_texts())
    cos = _cosines(vectors, reference)
    assert cos.min() >= 0.999, cos.min()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx.computed == len(vectors)
    assert onnx.dimension == 384


def test_onnx_int8_is_close_and_reported(models_dir: Path, reference: np.ndarray) -> None:
    int8 = build_embedder(
        backend="onnx-int8",
        model=None,
        device="cpu",
        batch_size=16,
        max_seq_length=256,
        models_dir=models_dir,
    )
    cos = _cosines(int8.encode(_sample_texts()), reference)
    print(f"int8 vs torch cosine: min {cos.min():.4f} mean {cos.mean():.4f}")
    assert cos.min() >= 0.97 and cos.mean() >= 0.99, (cos.min(), cos.mean())


def test_export_happens_once_and_is_reused(models_dir: Path) -> None:
    folder = next(models_dir.iterdir())
    assert folder == export_dir(models_dir, OnnxEmbedder(models_dir=models_dir).model_name)
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    again = OnnxEmbedder(models_dir=models_dir, device="cpu")
    again.encode(["a fresh process would load, not export"])
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in folder.iterdir()) == ["model-int8.onnx", "model.onnx"]


def test_length_batching_keeps_input_order(models_dir: Path) -> None:
    onnx = OnnxEmbedder(models_dir=models_dir, device="cpu", batch_size=4)
    texts = _sample_texts(12)
    shuffled = texts[::-1]
    a, b = onnx.encode(texts), onnx.encode(shuffled)
    assert np.allclose(a, b[::-1], atol=1e-5)
    one_by_one = np.stack([onnx.encode_query(t) for t in texts[:3]])
    assert np.allclose(a[:3], one_by_one, atol=1e-4)


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedding backend"):
        build_embedder(
            backend="tpu",
            model=None,
            device="cpu",
            batch_size=8,
            max_seq_length=128,
            models_dir=Path("/nonexistent"),
        )
