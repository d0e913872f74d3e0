"""Hostile code is contained: each case ends with a clear result or tool error,
the sandbox worker still serves, and killed containers are gone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.sandbox.settings import SandboxSettings
from services.worker.tools.base import ToolError, ToolResult
from services.worker.tools.code import BashArgs, BashTool, PythonArgs, PythonTool
from tests.sandbox.conftest import JobRefs, WorkerProc, make_job, tool_ctx

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


def assert_gone(container_id: str) -> None:
    client = docker.from_env()
    matches = [c for c in client.containers.list(all=True) if c.id.startswith(container_id)]
    assert matches == [], f"container {container_id} was left behind"


class TestResourceAbuse:
    def test_fork_bomb_hits_pids_limit_and_is_killed_at_timeout(self, run_py: RunPy) -> None:
        code = (
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
        )
        with pytest.raises(ToolError) as err:
            run_py(code, timeout=4)
        assert err.value.code == "sandbox_timeout"
        assert_gone(err.value.details["sandbox_id"])

    def test_memory_balloon_is_oom_killed(self, run_py: RunPy) -> None:
        result = run_py("b = b'x' * (1024 ** 3)\nprint('allocated')")
        assert result.data["exit_code"] != 0
        assert "allocated" not in result.data["stdout"]

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
    def test_no_network_egress(self, run_py: RunPy) -> None:
        code = (
            "import socket\n"
            "for host, port in [('127.0.0.1', 6379), ('127.0.0.1', 5432), ('172.17.0.1', 6379),"
            " ('169.254.169.254', 80), ('1.1.1.1', 53)]:\n"
            "    s = socket.socket(); s.settimeout(2)\n"
            "    try:\n"
            "        s.connect((host, port)); print(host, 'CONNECTED')\n"
            "    except OSError as e:\n"
            "        print(host, 'blocked', e.errno)\n"
        )
        out = run_py(code).data["stdout"]
        assert "CONNECTED" not in out
        assert out.count("blocked") == 5

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
