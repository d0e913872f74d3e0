"""Stdio MCP servers run inside a sandbox container: no network, read-only root.

The probe server (probe_server.py, run as ``python -c <source>``) tries to reach
two HTTP servers this test starts on the host — one on loopback, one on the
gateway of a Docker bridge network the test makes and removes (what a container on a bridge network
would reach) — and to write to ``/`` and into its mounted Python environment.
Isolated, every attempt fails; with ``"isolation": "none"`` the loopback one
answers (so the probe would report a reachable server). mcp-server-time works
through the isolated path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from services.common.mcp_servers import McpServerConfig
from services.common.net_guard import NetGuard
from services.common.sandbox_container import SandboxContainerSettings, docker_run_args, image_tag
from services.sandbox.image import ensure_image
from services.sandbox.settings import SandboxSettings
from services.worker.tools.mcp import McpCatalog, McpSettings
from services.worker.tools.mcp.isolation import (
    LABEL_SERVER,
    IsolationUnavailable,
    isolated_parameters,
    python_mounts,
)
from tests.sandbox.conftest import require_docker
from tests.worker.mcp.conftest import TIME

PROBE = [sys.executable, "-c", (Path(__file__).parent / "probe_server.py").read_text()]


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host\n")

    def log_message(self, *args: Any) -> None:
        pass


def _serve(host: str) -> tuple[ThreadingHTTPServer, str]:
    httpd = ThreadingHTTPServer((host, 0), _Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"{host}:{httpd.server_address[1]}"


@pytest.fixture(scope="module")
def made_network_gateway() -> Iterator[str]:
    """This host's address on a Docker bridge network this module makes and removes:
    what a bridge-networked container would reach the host at."""
    require_docker("for a bridge network to probe")
    name = f"leaflab-mcp-probe-{uuid.uuid4().hex[:10]}"
    subprocess.run(
        ["docker", "network", "create", name], capture_output=True, check=True, timeout=60
    )
    try:
        gateway = subprocess.run(
            ["docker", "network", "inspect", name, "--format",
             "{{range .IPAM.Config}}{{.Gateway}} {{end}}"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.split()  # fmt: skip
        yield next(g for g in gateway if ":" not in g)
    finally:
        subprocess.run(["docker", "network", "rm", name], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def image() -> str:
    require_docker("for isolated MCP servers")
    return ensure_image(SandboxSettings())


@pytest.fixture(scope="module")
def targets(made_network_gateway: str) -> Iterator[list[str]]:
    """Host HTTP servers: on loopback and on a Docker bridge's gateway (one this module made)."""
    servers = [_serve("127.0.0.1"), _serve(made_network_gateway)]
    addresses = [address for _, address in servers]
    assert all(a.split(":")[0] for a in addresses), addresses  # never a wildcard bind
    yield addresses
    for httpd, _ in servers:
        httpd.shutdown()
        httpd.server_close()


def catalog(servers: list[dict[str, Any]]) -> McpCatalog:
    settings = McpSettings(
        mcp_servers=json.dumps(servers), mcp_start_timeout_s=30, mcp_call_timeout_s=15
    )
    found = McpCatalog.from_settings(settings, guard=NetGuard(()))
    assert found is not None
    return found


def call(cat: McpCatalog, name: str, **arguments: Any) -> str:
    tool = cat.tool(name, None, None)
    return tool.run(tool.parse(arguments), None).content  # type: ignore[arg-type]


def running_mcp_containers(server: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={LABEL_SERVER}={server}"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return out.stdout.split()


class TestAnIsolatedServer:
    def test_reaches_no_network_and_cannot_write(self, image: str, targets: list[str]) -> None:
        assert image == image_tag(SandboxContainerSettings())
        name = f"probe-{uuid.uuid4().hex[:8]}"  # its containers are this test's alone
        cat = catalog([{"name": name, "command": PROBE}])
        try:
            reached = json.loads(call(cat, f"mcp.{name}.connect", targets=targets))
            assert set(reached) == set(targets)
            for target, outcome in reached.items():
                assert outcome.startswith("failed:"), f"{target} reachable from the sandbox"
            assert call(cat, f"mcp.{name}.write", path="/leaflab-probe").startswith("failed:")
            inside_env = f"{sys.prefix}/leaflab-probe"  # the mounted venv: read-only
            assert call(cat, f"mcp.{name}.write", path=inside_env).startswith("failed:")
            assert not Path(inside_env).exists()
            assert running_mcp_containers(name), "the server does not run in a container"
        finally:
            cat.close()
        assert running_mcp_containers(name) == []  # removed with the session

    def test_mcp_server_time_answers(self, image: str) -> None:
        cat = catalog([{"name": "time", "command": TIME}])
        try:
            names = [t.name for t in cat.offer(None, None).tools]
            assert names == ["mcp.time.convert_time", "mcp.time.get_current_time"]
            answer = json.loads(call(cat, "mcp.time.get_current_time", timezone="Asia/Tokyo"))
            assert answer["timezone"] == "Asia/Tokyo" and answer["datetime"].endswith("+09:00")
        finally:
            cat.close()


def test_without_isolation_the_probe_reaches_the_host(targets: list[str]) -> None:
    # The same probe as a plain child of the worker: loopback answers, so the
    # failures above are the container's doing, not a broken probe.
    cat = catalog([{"name": "probe", "command": PROBE, "isolation": "none"}])
    try:
        reached = json.loads(call(cat, "mcp.probe.connect", targets=targets[:1]))
        assert reached[targets[0]] == "answered: HTTP/1.0 200 OK"
    finally:
        cat.close()


class TestTheDockerCommand:
    """What `docker run` is given, without running it."""

    def test_it_carries_the_sandbox_hardening(self, tmp_path: Path) -> None:
        config = McpServerConfig(name="t", command=("mcp-server-time",))
        params = isolated_parameters(
            config, name="c1", home=tmp_path, docker_cli="docker", python_env=Path(sys.prefix)
        )
        args = " ".join(params.args)
        # The limits in force (the sandbox suite's conftest lowers them for the session).
        limits = SandboxContainerSettings()
        for flag in (
            "--network none",
            "--read-only",
            "--cap-drop ALL",
            "--security-opt no-new-privileges",
            f"--user {limits.sandbox_user}",
            f"--pids-limit {limits.sandbox_pids}",
            f"--memory {limits.sandbox_memory_mb}m",
            f"--memory-swap {limits.sandbox_memory_mb}m",
            "--rm",
            "-i",
        ):
            assert f" {flag} " in f" {args} ", flag  # fmt: skip
        assert f"--volume {sys.prefix}:{sys.prefix}:ro" in args
        assert args.endswith(f"{image_tag(limits)} mcp-server-time")
        assert "DATABASE_URL" not in args and set(params.env or {}) <= {
            "HOME", "LANG", "LC_ALL", "PATH", "DOCKER_HOST", "DOCKER_CONTEXT",
            "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
        }  # fmt: skip

    def test_an_option_without_a_flag_is_an_error_not_skipped(self) -> None:
        with pytest.raises(ValueError, match="no `docker run` flag is known for .*'privileged'"):
            docker_run_args({"read_only": True, "privileged": False})

    def test_only_a_virtual_environment_is_mounted(self, tmp_path: Path) -> None:
        with pytest.raises(IsolationUnavailable, match="not a virtual environment"):
            python_mounts(tmp_path)
        with pytest.raises(IsolationUnavailable):
            python_mounts(Path("/usr"))
        venv = tmp_path / "venv"
        venv.mkdir()
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
        assert python_mounts(venv) == [venv]  # the image's /usr serves, never hidden
        (venv / "pyvenv.cfg").write_text("home = /opt/py311/bin\n")
        assert python_mounts(venv) == [venv, Path("/opt/py311")]
