"""`leaflab …` as its own process, its output read line by line while it runs:
in a pipe (plain lines) or on a pseudo-terminal (the rich live view)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the installed `leaflab` script runs (pyproject's entry point), from this checkout.
ENTRY_POINT = "import sys; from services.cli.main import cli; sys.argv[0] = 'leaflab'; cli()"


class CliProcess:
    """A running ``leaflab ARGS``; ``output`` grows as the process writes."""

    def __init__(self, url: str, key: str, *args: str, terminal: bool = False) -> None:
        env = {
            **os.environ,
            "LEAFLAB_URL": url,
            "LEAFLAB_API_KEY": key,
            "COLUMNS": "200",  # wide enough that no line of the tests wraps
            "PYTHONPATH": str(ROOT),
        }
        env.pop("FORCE_COLOR", None)
        env.pop("TTY_COMPATIBLE", None)
        self._chunks: list[str] = []
        self._lock = threading.Lock()
        argv = [sys.executable, "-c", ENTRY_POINT, *args]
        if terminal:
            master, slave = pty.openpty()
            self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and CLI
                argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave
            )
            os.close(slave)
            self._reader = threading.Thread(target=self._read_fd, args=(master,), daemon=True)
        else:
            self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and CLI
                argv,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            assert self.proc.stdout is not None
            self._reader = threading.Thread(
                target=self._read_fd, args=(self.proc.stdout.fileno(),), daemon=True
            )
        self._reader.start()

    def _read_fd(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the pty's other end closed: the process has exited
                break
            if not chunk:
                break
            with self._lock:
                self._chunks.append(chunk.decode(errors="replace"))

    @property
    def output(self) -> str:
        with self._lock:
            return "".join(self._chunks).replace("\r\n", "\n")

    def wait_for(self, seen: Callable[[str], bool], timeout_s: float = 60) -> str:
        """The output once ``seen`` holds for it; fails if the process ends first."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.output
            if seen(out):
                return out
            if self.proc.poll() is not None:
                time.sleep(0.2)  # what it wrote last may still be in the pipe
                out = self.output
                if seen(out):
                    return out
                raise AssertionError(f"exited {self.proc.returncode} first:\n{out}")
            time.sleep(0.1)
        raise AssertionError(f"not seen within {timeout_s}s:\n{self.output}")

    def finish(self, timeout_s: float = 120) -> tuple[int, str]:
        """(exit status, all output) once the process ends."""
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {timeout_s}s:\n{self.output}") from None
        self._reader.join(timeout=5)
        return code, self.output

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
