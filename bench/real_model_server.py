"""Where the real-model benchmarks find their server: a base URL given, or the
local llama.cpp server (llama-cpp-python + Gemma 3 270M Q4_K_M) started for the run.

The local server is the one `leaflab up --local-model` and the real-model test
tier start (services/cli/up/local_model.py: ``.venv-llama`` and the cached model
that ``scripts/ensure_real_model.sh`` installs), with its settings
(``LEAFLAB_LOCAL_MODEL_*``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from services.cli.up.local_model import local_model
from tests.fixtures.processes import free_port


def local_model_missing() -> str | None:
    """Why the local real model cannot start here, or None when it can."""
    missing = local_model().missing()
    return "; ".join(missing) if missing else None


@contextmanager
def local_server(n_ctx: int | None = None, log: Path | None = None) -> Iterator[str]:
    """The local llama.cpp server on a free loopback port: its base URL (…/v1) while
    the block runs, stopped afterwards."""
    config = local_model(n_ctx=n_ctx)
    missing = config.missing()
    if missing:
        raise SystemExit("the local real model is not installed: " + "; ".join(missing))
    port = free_port()
    out = open(log or os.devnull, "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(  # noqa: S603 - our own launcher
        config.argv(port=port),
        env={**os.environ, **config.env()},
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_models(base_url, proc)
        yield base_url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
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


def add_server_args(parser: argparse.ArgumentParser) -> None:
    """--base-url | --start-local | --sim (with --latency-ms), --api-key, --model."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base-url", help="an OpenAI-compatible server's …/v1 URL")
    where.add_argument(
        "--start-local",
        action="store_true",
        help="start the local llama.cpp server (scripts/ensure_real_model.sh)",
    )
    where.add_argument("--sim", action="store_true", help="Leaflab's simulator (no real model)")
    parser.add_argument("--latency-ms", type=int, default=50, help="with --sim: per reply")
    parser.add_argument("--api-key", default=os.environ.get("LEAFLAB_LLM_API_KEY", ""))
    parser.add_argument("--model", help="default: the first model GET /v1/models lists")


@contextmanager
def model_server(args: argparse.Namespace, logs: Path) -> Iterator[str]:
    """The server ``add_server_args``' options name: its base URL (…/v1) for the block."""
    if args.base_url:
        yield args.base_url.rstrip("/")
    elif args.start_local:
        with local_server(log=logs / "llama-server.log") as url:
            yield url
    else:
        from services.model_sim.server import start_subprocess

        sim = start_subprocess(latency_ms=args.latency_ms)
        try:
            yield sim.base_url
        finally:
            sim.stop()
