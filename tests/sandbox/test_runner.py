"""The in-container runner (warm fast path) and its `docker exec` fallback,
through the real Docker backend (no Celery: these are about the backend)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from services.sandbox.backends.base import ExecOutcome, ExecRequest
from services.sandbox.backends.docker.backend import DockerBackend
from services.sandbox.owners import new_owner
from services.sandbox.settings import SandboxSettings

LIST_PROCS = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"


class Session:
    """One workspace driven through a backend, remembering each exec's events."""

    def __init__(self, backend: DockerBackend, settings: SandboxSettings) -> None:
        self.backend = backend
        self.workspace = settings.workspaces_dir / f"runner-{uuid.uuid4().hex}"
        self.events: list[tuple[str, dict[str, Any]]] = []

    def run(self, *argv: str, timeout: float = 20) -> ExecOutcome:
        self.events = []
        request = ExecRequest(
            argv=list(argv),
            workspace=self.workspace,
            session_key=self.workspace.name,
            timeout_s=timeout,
        )
        return self.backend.execute(request, lambda t, d: self.events.append((t, d)))

    @property
    def via(self) -> str:
        return next(d["via"] for t, d in self.events if t == "sandbox_end")


def open_backend(settings: SandboxSettings) -> DockerBackend:
    no_spares = settings.model_copy(update={"sandbox_pool_spares": 0})
    return DockerBackend(no_spares, owner=new_owner())


@pytest.fixture
def backend(
    sandbox_settings: SandboxSettings, sandbox_image: str, docker_ready: docker.DockerClient
) -> Iterator[DockerBackend]:
    b = open_backend(sandbox_settings)
    yield b
    b.close()


@pytest.fixture
def session(backend: DockerBackend, sandbox_settings: SandboxSettings) -> Session:
    return Session(backend, sandbox_settings)


class TestRunnerPath:
    def test_warm_execs_use_the_runner_and_leave_nothing_behind(self, session: Session) -> None:
        first = session.run("bash", "-c", "sleep 300 & echo started")
        assert first.stdout == "started\n" and first.exit_code == 0
        assert session.via == "runner"
        # The background job did not keep the exec open, and is gone now.
        assert not first.timed_out  # returned on its own, not stopped by the exec timeout
        second = session.run("python3", "-c", LIST_PROCS)
        assert second.warm and second.sandbox_id == first.sandbox_id
        assert session.via == "runner"
        procs = eval(second.stdout)  # noqa: S307 - a list of ints printed by the test code
        assert len(procs) == 2 and procs[0] == 1  # the runner (PID 1) and this python

    def test_exit_codes_streams_and_environment_match_docker_exec(self, session: Session) -> None:
        out = session.run("bash", "-c", "echo out; echo err >&2; umask; pwd; echo $HOME; exit 3")
        assert out.exit_code == 3
        assert out.stdout == "out\n0000\n/workspace\n/tmp\n" and out.stderr == "err\n"
        missing = session.run("no-such-program")
        assert missing.exit_code == 127 and "no-such-program" in missing.stderr
        killed = session.run("bash", "-c", "kill -9 $$")
        assert killed.exit_code == 137

    def test_code_cannot_kill_or_hijack_the_runner(self, session: Session) -> None:
        first = session.run(
            "bash",
            "-c",
            "kill -9 1; kill -INT 1; kill -9 -1; ls /proc/1/fd 2>&1; "
            "cat /proc/1/environ >/dev/null 2>&1 || echo environ-denied",
        )
        assert "Permission denied" in first.stdout and "environ-denied" in first.stdout
        again = session.run("python3", "-c", "print('alive')")
        assert again.stdout == "alive\n" and again.sandbox_id == first.sandbox_id
        assert session.via == "runner"

    def test_timeout_kills_the_container_through_the_runner(self, session: Session) -> None:
        out = session.run("python3", "-c", "while True: pass", timeout=2)
        assert out.timed_out and out.killed_reason == "timeout"
        types = [t for t, _ in session.events]
        assert {"sandbox_kill", "sandbox_timeout", "sandbox_cleanup"} <= set(types)
        left = docker.from_env().api.containers(all=True, filters={"id": out.sandbox_id})
        assert left == []


class TestForkedPython:
    """`python3 -c` runs as a fork of the runner; it must look like `python3 -c`."""

    def test_errors_exits_and_shutdown_behave_like_python_c(self, session: Session) -> None:
        crash = session.run("python3", "-c", "x = 1\n1/0")
        assert crash.exit_code == 1
        assert crash.stderr.startswith('Traceback (most recent call last):\n  File "<string>"')
        assert "sandbox_runner" not in crash.stderr and crash.stderr.endswith(
            "ZeroDivisionError: division by zero\n"
        )
        syntax = session.run("python3", "-c", "def f(:")
        assert syntax.exit_code == 1 and syntax.stderr.startswith('  File "<string>", line 1')
        assert session.run("python3", "-c", "import sys; sys.exit(7)").exit_code == 7
        shutdown = session.run(
            "python3",
            "-c",
            "import atexit, threading, time\n"
            "atexit.register(lambda: print('atexit'))\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n"
            "print('main', end='\\n', flush=False)",
        )
        assert shutdown.stdout == "main\nthread\natexit\n"

    def test_fresh_main_module_and_environment(self, session: Session) -> None:
        first = session.run("python3", "-c", "leaked = 1\nimport sys; sys.modules['json'].X = 1")
        assert first.exit_code == 0
        out = session.run(
            "python3",
            "-c",
            "import json, os, sys\n"
            "print(__name__, 'leaked' in globals(), hasattr(json, 'X'))\n"
            "print(sys.argv, sys.path[0] == '', os.getcwd(), os.environ['HOME'])\n"
            "print(sorted(os.listdir('/proc/self/fd')), oct(os.umask(0)))\n"
            "import numpy; print(numpy.arange(3).sum())",
        )
        assert out.stdout.splitlines() == [
            "__main__ False False",
            "['-c'] True /workspace /tmp",
            "['0', '1', '2', '3'] 0o0",
            "3",
        ], out.stderr

    def test_large_code_runs(self, session: Session) -> None:
        # Far above one exec argument's limit (128 KiB), which `docker exec` hits.
        code = "x = '" + "é" * 300_000 + "'\nprint(len(x))"
        out = session.run("python3", "-c", code)
        assert out.stdout == "300000\n", out.stderr


class TestFallback:
    def test_runner_disabled_uses_docker_exec(self, sandbox_settings: SandboxSettings) -> None:
        b = open_backend(sandbox_settings.model_copy(update={"sandbox_runner": False}))
        try:
            s = Session(b, sandbox_settings)
            out = s.run("bash", "-c", "echo plain; exit 5")
            assert (out.stdout, out.exit_code, s.via) == ("plain\n", 5, "exec")
        finally:
            b.close()

    def test_oom_kill_is_reported_through_docker_exec_too(
        self, sandbox_settings: SandboxSettings
    ) -> None:
        b = open_backend(sandbox_settings.model_copy(update={"sandbox_runner": False}))
        try:
            s = Session(b, sandbox_settings)
            out = s.run("python3", "-c", "b = b'x' * (1024 ** 3)")
            assert (out.exit_code, out.oom_killed, s.via) == (137, True, "exec"), out.stderr
        finally:
            b.close()

    def test_runner_that_cannot_start_falls_back_to_docker_exec(
        self, sandbox_settings: SandboxSettings, tmp_path: Path
    ) -> None:
        broken = tmp_path / "runner"
        broken.mkdir(mode=0o755)
        script = broken / "sandbox_runner.py"
        script.write_text("raise SystemExit(3)\n")
        script.chmod(0o644)
        b = open_backend(sandbox_settings.model_copy(update={"sandbox_runner_dir": broken}))
        try:
            s = Session(b, sandbox_settings)
            out = s.run("python3", "-c", "print(6 * 7)")
            assert (out.stdout, out.exit_code, s.via) == ("42\n", 0, "exec")
            assert [d["runner"] for t, d in s.events if t == "sandbox_start"] == [False]
        finally:
            b.close()

    def test_lost_runner_channel_falls_back_to_docker_exec_in_place(
        self, backend: DockerBackend, session: Session
    ) -> None:
        first = session.run("true")
        slot = backend.pool._idle[session.workspace.name]
        assert slot.runner is not None
        slot.runner.close()  # as if the attach connection dropped
        out = session.run("python3", "-c", "print('via exec')")
        assert out.stdout == "via exec\n" and out.sandbox_id == first.sandbox_id
        assert session.via == "exec"
