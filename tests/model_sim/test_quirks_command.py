"""`leaflab model-sim --quirks` / LEAFLAB_SIM_QUIRKS start the quirky server."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from services.model_sim.server import free_port


def _serve(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.model_sim", "--port", str(port), *args],
        env={**os.environ, **env},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("simulator did not start")


def test_the_env_variable_and_n_ctx_flag_select_llama_cpp_python() -> None:
    proc, url = _serve(["--n-ctx", "64"], {"LEAFLAB_SIM_QUIRKS": "llama-cpp-python"})
    try:
        assert httpx.get(f"{url}/v1/models").json()["data"][0]["owned_by"] == "me"
        long = {"role": "user", "content": "word " * 200}
        reply = httpx.post(
            f"{url}/v1/chat/completions", json={"model": "m", "messages": [long]}, timeout=5
        )
        assert reply.status_code == 400
        assert "maximum context length is 64 tokens" in reply.json()["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(5)


def test_vllm_quirks_state_the_window() -> None:
    proc, url = _serve(["--quirks", "vllm", "--n-ctx", "2048"], {})
    try:
        assert httpx.get(f"{url}/v1/models").json()["data"][0]["max_model_len"] == 2048
        counted = httpx.post(f"{url}/tokenize", json={"model": "m", "prompt": "Hello there"})
        assert counted.json()["count"] > 0
    finally:
        proc.terminate()
        proc.wait(5)
