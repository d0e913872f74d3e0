"""The bubblewrap backend (machines without Docker): exec, no network, timeout."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from services.sandbox.backends.base import ExecRequest, SandboxUnavailable
from services.sandbox.backends.bwrap.backend import BwrapBackend
from services.sandbox.backends.factory import build_backend
from services.sandbox.settings import SandboxSettings


@pytest.fixture
def bwrap(docker_ready: object, tmp_path: Path) -> BwrapBackend:
    # ensure_docker.sh (run by docker_ready) installs bubblewrap when missing.
    assert shutil.which("bwrap"), "bubblewrap is required for the bwrap backend tests"
    settings = SandboxSettings(
        home=tmp_path / "home", sandbox_backend="bwrap", sandbox_memory_mb=256
    )
    backend = build_backend(settings, owner="test")
    assert isinstance(backend, BwrapBackend)
    return backend


def run(
    backend: BwrapBackend,
    tmp_path: Path,
    argv: list[str],
    timeout: float = 10,
    network: bool = False,
) -> tuple[Any, list[str]]:
    events: list[str] = []
    request = ExecRequest(
        argv=argv,
        workspace=tmp_path / "ws",
        session_key="ws",
        timeout_s=timeout,
        allow_network=network,
    )
    return backend.execute(request, lambda t, _d: events.append(t)), events


class TestBwrapBackend:
    def test_basic_exec_writes_workspace_as_unprivileged_user(
        self,
        bwrap: BwrapBackend,
        tmp_path: Path,
    ) -> None:
        out, events = run(
            bwrap,
            tmp_path,
            ["python3", "-c", "import os; open('hello.txt','w').write('hi'); print(os.getuid())"],
        )
        assert out.exit_code == 0, out.stderr
        assert out.stdout.strip() == "10001"
        assert (tmp_path / "ws" / "hello.txt").read_text() == "hi"
        assert events == ["sandbox_start", "sandbox_end"]

    def test_no_network(self, bwrap: BwrapBackend, tmp_path: Path) -> None:
        code = (
            "import socket\ns = socket.socket(); s.settimeout(2)\n"
            "try:\n    s.connect(('127.0.0.1', 6379)); print('CONNECTED')\n"
            "except OSError as e:\n    print('blocked', e.errno)\n"
        )
        out, _ = run(bwrap, tmp_path, ["python3", "-c", code])
        assert out.stdout.startswith("blocked"), out.stdout + out.stderr

    def test_timeout_kills(self, bwrap: BwrapBackend, tmp_path: Path) -> None:
        out, events = run(bwrap, tmp_path, ["python3", "-c", "while True: pass"], timeout=1.5)
        assert out.timed_out and out.exit_code is None
        assert "sandbox_timeout" in events and "sandbox_kill" in events
        assert out.duration_ms < 5000

    def test_read_only_root_and_no_caps(self, bwrap: BwrapBackend, tmp_path: Path) -> None:
        code = (
            "try:\n    open('/usr/x', 'w'); print('WROTE')\n"
            "except OSError as e:\n    print(e.strerror)\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')])"
        )
        out, _ = run(bwrap, tmp_path, ["python3", "-c", code])
        assert "WROTE" not in out.stdout
        assert "'0000000000000000'" in out.stdout


def test_missing_docker_is_a_clear_error_not_a_fallback(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(SandboxUnavailable, match="Docker is not usable"):
        build_backend(SandboxSettings(home=tmp_path, sandbox_backend="docker"), owner="t")
