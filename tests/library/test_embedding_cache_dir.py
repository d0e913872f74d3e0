"""The exported embedding model is cached per machine, not per Leaflab home: a new home
(a second stack, a test run) reuses it; changed weights export anew."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.library.embedding.onnx_export import export_dir
from services.library.settings import LibrarySettings


def test_every_home_on_the_machine_shares_one_export_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LEAFLAB_EMBEDDING_MODELS_DIR", raising=False)
    first = LibrarySettings(home=tmp_path / "home-a").resolved_models_dir
    second = LibrarySettings(home=tmp_path / "home-b").resolved_models_dir
    assert first == second == tmp_path / "cache" / "leaflab" / "embedding-models"
    chosen = LibrarySettings(home=tmp_path / "a", embedding_models_dir=tmp_path / "mine")
    assert chosen.resolved_models_dir == tmp_path / "mine"


def test_changed_weights_get_a_new_export_folder(tmp_path: Path) -> None:
    model = tmp_path / "all-MiniLM-L6-v2"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"weights v1")
    before = export_dir(tmp_path / "cache", str(model))
    assert before == export_dir(tmp_path / "cache", str(model))  # stable while unchanged
    weights.write_bytes(b"weights v2, reinstalled")
    os.utime(weights, ns=(1, 1))
    assert export_dir(tmp_path / "cache", str(model)) != before
