"""The loopback OTLP receiver of the telemetry tests, run as its own process.

A real collector runs outside the traced process; decoding the protobuf in the
benchmark's own process would charge its CPU and GIL to the code being measured.
``python -m bench.otlp_sink`` prints the receiver's URL, then answers each
``count`` line on stdin with the number of spans received so far.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]


class OtlpSinkProcess:
    """``with OtlpSinkProcess() as sink:`` → ``sink.url``, ``sink.count()``."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "bench.otlp_sink"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.close()
            raise RuntimeError("the OTLP receiver did not start")

    def count(self) -> int:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write("count\n")
        self._proc.stdin.flush()
        return int(self._proc.stdout.readline())

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> OtlpSinkProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def main() -> None:
    from tests.telemetry.otlp_receiver import start_receiver

    receiver, server = start_receiver()
    print(receiver.url, flush=True)
    for line in sys.stdin:  # until the parent closes our stdin
        if line.strip() == "count":
            with receiver.lock:
                print(len(receiver.spans), flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
