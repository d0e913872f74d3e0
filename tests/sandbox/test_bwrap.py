"""The bubblewrap backend (machines without Docker): exec, no network, timeout."""

from __future__ import annotations

import ast
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from services.sandbox.backends.base import (
    ExecRequest,
    SandboxNetworkUnavailable,
    SandboxUnavailable,
)
from services.sandbox.backends.bwrap.backend import BwrapBackend
from services.sandbox.backends.factory import build_backend
from services.sandbox.settings import SandboxSettings

PROBE = (
    "import errno, socket\n"
    "s = socket.socket(); s.settimeout(5)\n"
    "try:\n    s.connect(('127.0.0.1', {port})); print('CONNECTED')\n"
    "except OSError as e:\n    print(errno.errorcode.get(e.errno, e.errno))\n"
)


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

    def test_no_network_and_network_enabled_execs_are_refused(
        self, bwrap: BwrapBackend, tmp_path: Path
    ) -> None:
        # A listener on the host's loopback: a sandbox sharing the host's
        # network namespace would connect; in its own namespace the loopback
        # is empty and the connection is refused.
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            code = PROBE.format(port=port)
            closed, _ = run(bwrap, tmp_path, ["python3", "-c", code])
            # bwrap's network is the host's own namespace (its loopback, every port the
            # host listens on): a network-enabled project is refused, nothing runs.
            with pytest.raises(SandboxNetworkUnavailable, match="bwrap") as refused:
                run(bwrap, tmp_path, ["python3", "-c", code], network=True)
            listener.settimeout(0.5)
            with pytest.raises(TimeoutError):
                listener.accept()  # nobody connected
        assert closed.stdout.strip() == "ECONNREFUSED", closed.stdout + closed.stderr
        assert refused.value.code == "sandbox_network_unavailable"

    def test_timeout_kills(self, bwrap: BwrapBackend, tmp_path: Path) -> None:
        out, events = run(bwrap, tmp_path, ["python3", "-c", "while True: pass"], timeout=1.5)
        assert out.timed_out and out.exit_code is None
        assert "sandbox_timeout" in events and "sandbox_kill" in events

    def test_read_only_root_and_no_caps(self, bwrap: BwrapBackend, tmp_path: Path) -> None:
        code = (
            "try:\n    open('/usr/x', 'w'); print('WROTE')\n"
            "except OSError as e:\n    print(e.strerror)\n"
            "print(dict(l.split() for l in open('/proc/self/status') if l.startswith('Cap')))"
        )
        out, _ = run(bwrap, tmp_path, ["python3", "-c", code])
        first, caps_line = out.stdout.splitlines()
        assert first == "Read-only file system", out.stdout + out.stderr
        caps = ast.literal_eval(caps_line)
        # Effective, permitted and bounding sets all empty: nothing to use now,
        # nothing to regain later (CapInh is zero anyway and proves nothing).
        for field in ("CapEff:", "CapPrm:", "CapBnd:", "CapAmb:"):
            assert int(caps[field], 16) == 0, caps


def test_missing_docker_is_a_clear_error_not_a_fallback(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(SandboxUnavailable, match="Docker is not usable"):
        build_backend(SandboxSettings(home=tmp_path, sandbox_backend="docker"), owner="t")
