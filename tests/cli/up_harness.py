"""Running real `leaflab up` stacks in tests: start, wait for "ready", inspect, clean up."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LEAFLAB = [sys.executable, "-m", "services.cli.main"]
READY = "Leaflab is ready"
PDF = Path("/work/shared/data/pdfs/1903.10676.pdf")


def up_env(home: Path, api_port: int) -> dict[str, str]:
    """The user's environment: no configured stores, so `up` embeds its own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEAFLAB_DATABASE_URL", "LEAFLAB_REDIS_URL", "LEAFLAB_API_KEY")
        and not k.startswith("OTEL_")
    }
    env.update(LEAFLAB_HOME=str(home), LEAFLAB_URL=f"http://127.0.0.1:{api_port}")
    return env


@dataclass
class UpStack:
    home: Path
    api_port: int
    proc: subprocess.Popen[bytes]
    output: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def record(self) -> dict[str, Any]:
        return dict(json.loads((self.home / "stack.json").read_text()))

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*LEAFLAB, *args],
            env=up_env(self.home, self.api_port),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def key(self) -> str:
        return (self.home / "admin.key").read_text().strip()


def new_home() -> Path:
    # Embedded PostgreSQL runs as an unprivileged user when we are root, so the
    # path to its data must be traversable (pytest's tmp dirs are mode 700).
    base = Path(tempfile.mkdtemp(prefix="leaflab-up-", dir="/tmp"))
    base.chmod(0o755)
    return base / "home"


def start_up(
    home: Path,
    api_port: int,
    *,
    model_sim: str = "",
    model_args: list[str] | None = None,
    timeout_s: float = 300,
) -> UpStack:
    """`leaflab up --port P --model-sim [SCRIPT]` in its own session; returns once ready.
    ``model_args`` replace ``--model-sim`` (e.g. ``["--local-model"]``)."""
    output = home.parent / f"up-{api_port}-{time.monotonic_ns()}.out"
    if model_args is None:
        model_args = ["--model-sim", *([model_sim] if model_sim else [])]
    with output.open("wb") as out:
        proc = subprocess.Popen(
            [*LEAFLAB, "up", "--port", str(api_port), *model_args],
            env=up_env(home, api_port),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the test can clean up everything
        )
    stack = UpStack(home, api_port, proc, output)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if READY in stack.text():
            return stack
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    kill_group(stack)
    raise AssertionError(f"leaflab up did not get ready:\n{stack.text()}")


def stop(stack: UpStack, signum: signal.Signals = signal.SIGINT) -> int:
    """Send ``signum`` to the supervisor only and wait for it to exit."""
    stack.proc.send_signal(signum)
    return stack.proc.wait(timeout=120)


def kill_group(stack: UpStack) -> None:
    """Last-resort cleanup: everything in the stack's process group, and its home."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(stack.proc.pid, signal.SIGKILL)
    for pid in processes_of(stack.home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        stack.proc.wait(timeout=10)


def remove(home: Path) -> None:
    shutil.rmtree(home.parent, ignore_errors=True)


def processes_of(home: Path) -> list[int]:
    """Every process started for the stack at ``home`` (its environment names the home)."""
    marker = f"LEAFLAB_HOME={home}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if marker in environ and state != "Z":
            found.append(int(entry))
    return found


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (PostgreSQL rewrites its environment for its
    process title, so the process tree finds what :func:`processes_of` cannot)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().split(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> list[int]:
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            left.append(pid)
    return sorted(left)


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_until_gone(
    home: Path, ports: list[int], tree: set[int], timeout_s: float = 60
) -> tuple[list[int], list[int]]:
    """Poll until no process of the stack (its ``tree`` as seen before, and anything
    naming its home) is left and its ports are free; returns what is left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = sorted(set(processes_of(home)) | set(alive(tree)))
        taken = [p for p in ports if not port_free(p)]
        if (not left and not taken) or time.monotonic() > deadline:
            return left, taken
        time.sleep(0.3)
