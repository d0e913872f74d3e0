"""Where the local real model lives and the command line that serves it.

`leaflab up --local-model` and the real-model test tier start the same server: llama.cpp
(llama-cpp-python[server], in its own venv ``.venv-llama``) on Gemma 3 270M Q4_K_M, both
installed and cached by ``scripts/ensure_real_model.sh``. This module runs in Leaflab's
venv and never imports llama_cpp: it only finds the paths and builds the argv of
``python -m services.local_model`` for .venv-llama's python.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.common.machine_cache import machine_cache_dir

REPO_ROOT = Path(__file__).resolve().parents[3]
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
ENSURE_SCRIPT = "scripts/ensure_real_model.sh"


def default_cache_dir() -> Path:
    return machine_cache_dir()


class LocalModelSettings(BaseSettings):
    """Settings of the local real model (env prefix ``LEAFLAB_``)."""

    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    # Where the built llama-cpp-python wheel and the assembled model are cached.
    cache_dir: Path = Field(default_factory=default_cache_dir)
    # The python of the venv that has llama-cpp-python[server] (default <repo>/.venv-llama).
    local_model_python: Path | None = None
    # The .gguf served (default <cache_dir>/models/gemma-3-270m-q4_k_m.gguf).
    local_model_path: Path | None = None
    local_model_alias: str = "gemma-3-270m"
    local_model_ctx: int = Field(default=8192, ge=512)
    local_model_threads: int = Field(default=2, ge=1)


@dataclass(frozen=True)
class LocalModel:
    """One configured local model server (not yet started)."""

    python: Path
    model_path: Path
    alias: str
    n_ctx: int
    threads: int

    def missing(self) -> list[str]:
        """What is not installed, each with how to fix it; empty when it can start."""
        out = []
        if not self.python.exists():
            out.append(f"{self.python} (llama-cpp-python's venv): run {ENSURE_SCRIPT}")
        if not self.model_path.exists():
            out.append(f"{self.model_path} (the model): run {ENSURE_SCRIPT}")
        return out

    def argv(self, *, port: int, host: str = "127.0.0.1") -> list[str]:
        """``python -m services.local_model ...`` with .venv-llama's python."""
        return [
            str(self.python),
            "-m",
            "services.local_model",
            "--model",
            str(self.model_path),
            "--alias",
            self.alias,
            "--host",
            host,
            "--port",
            str(port),
            "--n-ctx",
            str(self.n_ctx),
            "--n-threads",
            str(self.threads),
        ]

    def env(self) -> dict[str, str]:
        """What the launcher's process needs: Leaflab's tree importable, nothing else
        of Leaflab's venv (its python is .venv-llama's)."""
        return {"PYTHONPATH": str(REPO_ROOT)}


def local_model(
    settings: LocalModelSettings | None = None, *, n_ctx: int | None = None
) -> LocalModel:
    """The local model as configured (``n_ctx`` overrides the configured window)."""
    s = settings or LocalModelSettings()
    cache = s.cache_dir.expanduser()
    return LocalModel(
        python=(s.local_model_python or REPO_ROOT / ".venv-llama" / "bin" / "python").expanduser(),
        model_path=(s.local_model_path or cache / "models" / MODEL_FILE).expanduser(),
        alias=s.local_model_alias,
        n_ctx=n_ctx if n_ctx is not None else s.local_model_ctx,
        threads=s.local_model_threads,
    )
