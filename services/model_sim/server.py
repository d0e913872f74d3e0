"""Running the simulator: in the foreground, in a background thread, or as a subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn

from services.model_sim.app import DEFAULT_MODEL, SimConfig, create_app
from services.model_sim.quirks import DEFAULT_N_CTX, QuirkName, Quirks
from services.model_sim.script import Script, load_script


def build_config(
    script: Path | Script | None = None,
    *,
    latency_ms: int = 0,
    model: str = DEFAULT_MODEL,
    quirks: QuirkName = "none",
    n_ctx: int = DEFAULT_N_CTX,
    control_token: str | None = None,
) -> SimConfig:
    """A config from a script file (validated now, so a bad file fails before serving)."""
    default = load_script(script) if isinstance(script, Path) else script
    return SimConfig(
        default_script=default,
        latency_ms=latency_ms,
        model=model,
        quirks=Quirks(quirks, n_ctx),
        control_token=control_token or None,
    )


def _uvicorn_config(config: SimConfig, host: str, port: int) -> uvicorn.Config:
    # Big backlog: benchmarks open hundreds of connections at once.
    return uvicorn.Config(
        create_app(config),
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        backlog=4096,
        timeout_keep_alive=30,
    )


def serve(config: SimConfig, *, host: str = "127.0.0.1", port: int = 8100) -> None:
    """Serve in the foreground until interrupted."""
    uvicorn.Server(_uvicorn_config(config, host, port)).run()


@dataclass
class SimServerHandle:
    """A simulator running in this process; ``url`` is the root, ``base_url`` the /v1 root."""

    host: str
    port: int
    _server: uvicorn.Server
    _thread: threading.Thread = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stop(self, timeout_s: float = 5.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)

    def __enter__(self) -> SimServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_thread(
    port: int = 0,
    script: Path | Script | None = None,
    *,
    host: str = "127.0.0.1",
    latency_ms: int = 0,
    model: str = DEFAULT_MODEL,
    quirks: QuirkName = "none",
    n_ctx: int = DEFAULT_N_CTX,
    control_token: str | None = None,
) -> SimServerHandle:
    """Start the simulator on a background thread (port 0: any free port) and wait until
    it accepts connections."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = build_config(
        script,
        latency_ms=latency_ms,
        model=model,
        quirks=quirks,
        n_ctx=n_ctx,
        control_token=control_token,
    )
    server = uvicorn.Server(_uvicorn_config(config, host, bound_port))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="model-sim", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("model simulator did not start")
        time.sleep(0.01)
    return SimServerHandle(host=host, port=bound_port, _server=server, _thread=thread)


@dataclass
class SimProcess:
    """A simulator in a child process (``python -m services.model_sim``)."""

    url: str
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stop(self, timeout_s: float = 5.0) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def start_subprocess(
    *, port: int | None = None, script: Path | None = None, latency_ms: int = 0
) -> SimProcess:
    """Start ``python -m services.model_sim`` and wait for ``/healthz``."""
    port = port or free_port()
    cmd = [sys.executable, "-m", "services.model_sim", "--port", str(port)]
    cmd += ["--latency-ms", str(latency_ms)]
    if script is not None:
        cmd += ["--script", str(script)]
    process = subprocess.Popen(cmd)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"model simulator exited with status {process.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return SimProcess(url=url, process=process)
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("model simulator did not become healthy within 20 s")
