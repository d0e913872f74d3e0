"""Length-bucketed batches: sorting a document's texts by token length before
batching changes only the padding, never which vector belongs to which text."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from services.library.embedding import Embedder, OnnxEmbedder


class _Recording(Embedder):
    """Vectors from each text's hash; records the batches it was handed."""

    backend = "fake"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(model="fake", batch_size=3, **kwargs)  # type: ignore[arg-type]
        self.batches: list[list[str]] = []

    @property
    def dimension(self) -> int:
        return 8

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.batches.append(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
        vectors = np.stack(rows).astype(np.float32) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


TEXTS = [("word " * n).strip() + f" #{i}" for i, n in enumerate([9, 1, 30, 4, 17, 2, 25, 6])]


def test_bucketed_batches_keep_each_texts_vector_in_input_order() -> None:
    bucketed, plain = _Recording(length_buckets=True), _Recording(length_buckets=False)
    a, b = bucketed.encode(TEXTS), plain.encode(TEXTS)
    assert np.array_equal(a, b)
    assert np.array_equal(a, np.stack([plain.encode([t])[0] for t in TEXTS]))
    # Bucketing really happened: each batch holds neighbours in length.
    assert [len(t) for batch in bucketed.batches for t in batch] == sorted(map(len, TEXTS))
    assert plain.batches[0] == TEXTS[:3]


@pytest.fixture(scope="module")
def onnx(tmp_path_factory: pytest.TempPathFactory) -> OnnxEmbedder:
    return OnnxEmbedder(models_dir=tmp_path_factory.mktemp("models"), device="cpu", batch_size=3)


def test_token_buckets_match_unbucketed_vectors(onnx: OnnxEmbedder) -> None:
    """Real model (fp32): only the padding differs, so float noise only."""
    assert onnx.lengths(["a b c", "a"]) == [5, 3]  # [CLS] … [SEP]
    onnx.length_buckets = False
    plain = onnx.encode(TEXTS)
    onnx.length_buckets = True
    bucketed = onnx.encode(TEXTS)
    assert np.allclose(bucketed, plain, atol=1e-5)
    alone = np.stack([onnx.encode_query(t) for t in TEXTS])
    assert np.allclose(bucketed, alone, atol=1e-5)
    assert not np.allclose(bucketed[0], bucketed[1], atol=1e-2)
