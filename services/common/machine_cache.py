"""This machine's cache for what is costly to make and the same for every Leaflab
home on it: the built model-server wheel and GGUF model, the exported embedding
model, the sandbox image's build lock. ``$XDG_CACHE_HOME/leaflab`` (default
``~/.cache/leaflab``), so a new ``LEAFLAB_HOME`` (a second stack, a test run) does
not redo minutes of work."""

from __future__ import annotations

import os
from pathlib import Path


def machine_cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "leaflab"
