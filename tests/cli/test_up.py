"""`leaflab up` as a new user runs it: embedded stack, a job, a crash, Ctrl-C, restart."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.fixtures.processes import free_port

LEAFLAB = [sys.executable, "-m", "services.cli.main"]


def _env(home: Path, api_port: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEAFLAB_DATABASE_URL", "LEAFLAB_REDIS_URL", "LEAFLAB_API_KEY")
    }
    env.update(LEAFLAB_HOME=str(home), LEAFLAB_URL=f"http://127.0.0.1:{api_port}")
    return env


def _start(home: Path, api_port: int, sim_port: int) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [*LEAFLAB, "up", "--port", str(api_port), "--model-sim", "--model-sim-port", str(sim_port)],
        env=_env(home, api_port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 180
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Leaflab is up" in line:
            return proc, lines
    proc.kill()
    raise AssertionError("leaflab up did not come up:\n" + "".join(lines))


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    return out


def _cli(home: Path, api_port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LEAFLAB, *args], env=_env(home, api_port), capture_output=True, text=True, timeout=120
    )


def _worker_pid(home: Path) -> int:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if b"services.worker.app:app" in b" ".join(cmd) and str(home).encode() in env:
            return int(pid)
    raise AssertionError("worker process not found")


class TestUp:
    def test_up_runs_a_job_survives_a_crash_stops_and_restarts_on_same_data(self) -> None:
        # Embedded PostgreSQL runs as an unprivileged user when we are root, so its
        # data dir must be reachable by others (pytest's tmp dirs are mode 700).
        home = Path(tempfile.mkdtemp(prefix="leaflab-up-", dir="/tmp")) / "home"
        home.parent.chmod(0o755)
        api_port, sim_port = free_port(), free_port()
        proc, _ = _start(home, api_port, sim_port)
        try:
            key = (home / "admin.key").read_text().strip()
            assert key.startswith("lf_")
            submitted = _cli(home, api_port, "submit", "hello there", "--watch")
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            assert "[succeeded]" in submitted.stdout

            os.kill(_worker_pid(home), signal.SIGKILL)  # the supervisor must restart it
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    _worker_pid(home)
                    break
                except AssertionError:
                    time.sleep(0.5)
            again = _cli(home, api_port, "submit", "after the crash", "--watch")
            assert again.returncode == 0, again.stdout + again.stderr
        finally:
            out = _stop(proc)
        assert "stopped" in out

        proc, _ = _start(home, api_port, sim_port)
        try:
            assert (home / "admin.key").read_text().strip() == key  # same data, same admin
            listed = httpx.get(
                f"http://127.0.0.1:{api_port}/v1/jobs", headers={"Authorization": f"Bearer {key}"}
            ).json()["items"]
            assert len(listed) == 2 and {j["status"] for j in listed} == {"succeeded"}
        finally:
            _stop(proc)
            shutil.rmtree(home.parent, ignore_errors=True)
