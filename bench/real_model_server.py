"""Where the real-model benchmarks find their server: a base URL given, or the
local llama.cpp server (llama-cpp-python + Gemma 3 270M Q4_K_M) started for the run.

The local server and model are the ones ``scripts/ensure_real_model.sh`` installs
(``.venv-llama`` in the repository, the model under ``$LEAFLAB_CACHE_DIR/models``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.fixtures.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("LEAFLAB_CACHE_DIR", Path.home() / ".cache" / "leaflab"))
LLAMA_PYTHON = ROOT / ".venv-llama" / "bin" / "python"
MODEL_FILE = CACHE / "models" / "gemma-3-270m-q4_k_m.gguf"


def local_model_missing() -> str | None:
    """Why the local real model cannot start here, or None when it can."""
    if not LLAMA_PYTHON.exists():
        return f"{LLAMA_PYTHON} is missing (run scripts/ensure_real_model.sh)"
    if not MODEL_FILE.exists():
        return f"{MODEL_FILE} is missing (run scripts/ensure_real_model.sh)"
    return None


@contextmanager
def local_server(n_ctx: int = 8192, log: Path | None = None) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port; its base URL
    (…/v1) while the block runs, stopped afterwards."""
    missing = local_model_missing()
    if missing:
        raise SystemExit(missing)
    port = free_port()
    argv = [str(LLAMA_PYTHON), "-m", "llama_cpp.server", "--model", str(MODEL_FILE),
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]  # fmt: skip
    out = open(log or os.devnull, "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_models(base_url, proc)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        out.close()


def _wait_models(base_url: str, proc: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited ({proc.returncode})")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the llama.cpp server did not answer at {base_url} in {timeout_s:.0f} s")


def served_model(base_url: str, api_key: str = "") -> str:
    """The first model the server lists (``GET /v1/models``)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    resp = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=10)
    resp.raise_for_status()
    return str(resp.json()["data"][0]["id"])
