"""Hostile code is contained: each case ends with a clear result or tool error,
the sandbox worker still serves, and killed containers are gone."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.sandbox import executions
from services.sandbox.settings import SandboxSettings
from services.worker.tools.base import ToolError, ToolResult
from services.worker.tools.code import BashArgs, BashTool, PythonArgs, PythonTool
from tests.sandbox.conftest import JobRefs, WorkerProc, make_job, tool_ctx
from tests.sandbox.listeners import Listener

RunPy = Callable[..., ToolResult]


@pytest.fixture
def refs(session_factory: sessionmaker[Session]) -> JobRefs:
    return make_job(session_factory)


@pytest.fixture
def run_py(
    refs: JobRefs,
    celery_client: Celery,
    sandbox_settings: SandboxSettings,
    sandbox_worker: WorkerProc,
) -> Iterator[RunPy]:
    def run(code: str, timeout: float = 20) -> ToolResult:
        return PythonTool().run(
            PythonArgs(code=code, timeout=timeout), tool_ctx(refs, celery_client, sandbox_settings)
        )

    yield run
    # Whatever the case did, the worker is alive and the session still works.
    assert sandbox_worker.alive(), sandbox_worker.log.read_text()[-3000:]
    assert run("print('still here')").data["stdout"] == "still here\n"


@pytest.fixture
def made_network_gateway(docker_ready: docker.DockerClient) -> Iterator[str]:
    """The host's address on a Docker bridge network this test makes and removes: what
    a bridge-networked container would reach the host at."""
    network = docker_ready.networks.create(f"leaflab-abuse-{uuid.uuid4().hex[:10]}")
    try:
        network.reload()
        yield str(network.attrs["IPAM"]["Config"][0]["Gateway"])
    finally:
        network.remove()


@pytest.fixture
def listeners(made_network_gateway: str) -> Iterator[tuple[Listener, Listener]]:
    """Listeners the sandbox would reach with networking on: on a Docker bridge's
    gateway (any bridge-networked container) and on the host's loopback (a
    container sharing the host's network namespace)."""
    pair = (Listener(made_network_gateway), Listener("127.0.0.1"))
    yield pair
    for listener in pair:
        listener.close()


def probe_code(targets: list[Listener]) -> str:
    """Python that connects to each target and prints CONNECTED or the errno's name."""
    addresses = [(t.host, t.port) for t in targets]
    return (
        "import errno, socket\n"
        f"for host, port in {addresses!r}:\n"
        "    s = socket.socket(); s.settimeout(10)\n"
        "    try:\n"
        "        s.connect((host, port)); print('CONNECTED')\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode.get(e.errno, 'timeout' if e.errno is None else e.errno))\n"
        "    finally:\n"
        "        s.close()\n"
    )


def assert_gone(container_id: str) -> None:
    client = docker.from_env()
    matches = [c for c in client.api.containers(all=True) if c["Id"].startswith(container_id)]
    assert matches == [], f"container {container_id} was left behind"


class TestResourceAbuse:
    def test_fork_bomb_hits_the_pids_limit(
        self, run_py: RunPy, sandbox_settings: SandboxSettings
    ) -> None:
        # Children sleep, the parent forks until the kernel says no: with the
        # pids limit the first failure is EAGAIN well below the limit, and the
        # container's pids cgroup counts the refusal ("max N" in pids.events).
        code = (
            "import errno, os, time\n"
            "made = 0\n"
            "while True:\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError as e:\n"
            "        failure = errno.errorcode[e.errno]\n"
            "        break\n"
            "    if pid == 0:\n"
            "        time.sleep(300)\n"
            "        os._exit(0)\n"
            "    made += 1\n"
            "events = ''\n"
            "for path in ('/sys/fs/cgroup/pids.events', '/sys/fs/cgroup/pids/pids.events'):\n"
            "    if os.path.exists(path):\n"
            "        events = open(path).read().split()\n"
            "print(failure, made, events[events.index('max') + 1])\n"
        )
        result = run_py(code, timeout=60)
        words = result.data["stdout"].split()
        assert len(words) == 3, result.content
        failure, made, refused = words
        assert failure == "EAGAIN", result.content
        assert int(made) < sandbox_settings.sandbox_pids
        assert int(refused) >= 1  # the pids cgroup refused at least one fork

    def test_memory_balloon_is_oom_killed(
        self,
        refs: JobRefs,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        sandbox_worker: WorkerProc,
        session_factory: sessionmaker[Session],
    ) -> None:
        ctx = tool_ctx(refs, celery_client, sandbox_settings)
        result = PythonTool().run(
            PythonArgs(code="b = b'x' * (1024 ** 3)\nprint('allocated')", timeout=60), ctx
        )
        assert "allocated" not in result.data["stdout"]
        assert result.data["exit_code"] == 137  # SIGKILL ...
        assert result.data["oom_killed"] is True  # ... by the OOM killer
        row = executions.stored(session_factory, executions.exec_key(refs.job_id, ctx.tool_call_id))
        assert row is not None and row.result is not None
        assert row.result["oom_killed"] is True  # recorded in the ledger too

    def test_plain_sigkill_is_not_reported_as_oom(self, run_py: RunPy) -> None:
        result = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        assert result.data["exit_code"] == 137
        assert result.data["oom_killed"] is False

    def test_cpu_spin_past_timeout_is_killed(self, run_py: RunPy) -> None:
        with pytest.raises(ToolError) as err:
            run_py("while True:\n    pass", timeout=2)
        assert err.value.code == "sandbox_timeout"
        events = [e["type"] for e in err.value.details["events"]]
        assert {"sandbox_timeout", "sandbox_kill", "sandbox_cleanup"} <= set(events)
        assert_gone(err.value.details["sandbox_id"])

    def test_gigabyte_of_stdout_is_capped_and_killed(self, run_py: RunPy) -> None:
        code = "import sys\nblock = 'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.write(block)"
        with pytest.raises(ToolError) as err:
            run_py(code)
        assert err.value.code == "sandbox_output_limit"
        assert len(err.value.message) < 100_000  # the model sees a capped head + tail
        assert "bytes of output omitted" in err.value.message

    def test_disk_fill_is_bounded(self, run_py: RunPy) -> None:
        code = (
            "import errno\n"
            "def fill(path):\n"
            "    try:\n"
            "        with open(path, 'wb') as f:\n"
            "            for _ in range(200): f.write(b'0' * (1 << 20)); f.flush()\n"
            "    except OSError as e:\n"
            "        return errno.errorcode[e.errno]\n"
            "    return 'no error'\n"
            "print(fill('/tmp/fill'), fill('/workspace/fill'))\n"
        )
        result = run_py(code)
        tmp_err, ws_err = result.data["stdout"].split()
        assert tmp_err == "ENOSPC"  # size-capped tmpfs
        assert ws_err == "EFBIG"  # file-size ulimit

    def test_workspace_quota_kills_a_many_files_filler(self, run_py: RunPy) -> None:
        code = (
            "import time\ni = 0\nwhile True:\n"
            "    open(f'f{i}', 'wb').write(b'0' * (8 << 20)); i += 1; time.sleep(0.05)\n"
        )
        with pytest.raises(ToolError) as err:
            run_py(code, timeout=30)
        assert err.value.code == "sandbox_disk_quota"


class TestIsolation:
    def test_no_network_egress(self, run_py: RunPy, listeners: tuple[Listener, Listener]) -> None:
        bridge, host_loopback = listeners
        out = run_py(probe_code([bridge, host_loopback])).data["stdout"].split()
        # No route at all to the Docker bridge (the container has only lo) ...
        assert out[0] == "ENETUNREACH", out
        # ... and its loopback is its own: nothing listens there.
        assert out[1] == "ECONNREFUSED", out
        assert bridge.accepted == [] and host_loopback.accepted == []

    def test_root_filesystem_is_read_only(self, run_py: RunPy) -> None:
        code = (
            "for p in ['/x', '/usr/x', '/etc/passwd']:\n"
            "    try:\n        open(p, 'a').write('x'); print(p, 'WROTE')\n"
            "    except OSError as e:\n        print(p, e.strerror)\n"
        )
        out = run_py(code).data["stdout"]
        assert "WROTE" not in out and "Read-only file system" in out

    def test_host_files_are_not_visible(self, run_py: RunPy, tmp_path: Path) -> None:
        secret = tmp_path / "host-secret.txt"
        secret.write_text("TOP-SECRET")
        code = (
            "import os\n"
            f"print('host file visible:', os.path.exists({str(secret)!r}))\n"
            "try:\n    open('/etc/shadow').read(); print('shadow READABLE')\n"
            "except OSError as e:\n    print('shadow', e.strerror)\n"
            "print('uid', os.getuid())\n"
        )
        out = run_py(code).data["stdout"]
        assert "host file visible: False" in out
        assert "shadow Permission denied" in out
        assert "uid 10001" in out

    def test_no_effective_capabilities(self, run_py: RunPy) -> None:
        out = run_py("print([l for l in open('/proc/self/status') if l.startswith('Cap')])")
        status = out.data["stdout"]
        for field in ("CapEff", "CapPrm", "CapBnd"):
            assert f"{field}:\\t0000000000000000" in status

    def test_no_new_privileges(self, run_py: RunPy) -> None:
        out = run_py("print([l for l in open('/proc/self/status') if 'NoNewPrivs' in l])")
        assert "NoNewPrivs:\\t1" in out.data["stdout"]


class TestBashAbuse:
    def test_shell_fork_bomb_is_refused(
        self,
        refs: JobRefs,
        celery_client: Celery,
        sandbox_settings: SandboxSettings,
        sandbox_worker: WorkerProc,
    ) -> None:
        with pytest.raises(ToolError) as err:
            BashTool().run(
                BashArgs(command=":(){ :|:& };:"), tool_ctx(refs, celery_client, sandbox_settings)
            )
        assert err.value.code == "dangerous_command"
