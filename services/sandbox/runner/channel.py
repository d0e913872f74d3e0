"""Host end of the in-container runner (see sandbox_runner.py next to it).

The channel is the container's attached stdin/stdout, opened with Docker's
attach API *before* the container starts so the runner's ready frame cannot be
missed. Docker multiplexes the attached stream (8-byte headers per chunk);
inside it the runner writes its own frames. Everything read is bounded: a
frame over :data:`MAX_FRAME` is a protocol error, never a big allocation.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docker

from services.sandbox.runner.sandbox_runner import (
    ERR,
    EXIT,
    HEADER,
    MAX_REQUEST,
    OUT,
    READY,
    STARTED,
)

DOCKER_HEADER = struct.Struct(">BxxxL")
DOCKER_STDOUT = 1
MAX_FRAME = 1 << 20
RECV = 256 * 1024
# Path of the runner inside the container; its directory is bind-mounted read-only.
RUNNER_MOUNT = "/opt/leaflab-runner"
# -I: no PYTHON* variables, no user site; `site` stays (forked runs import from it).
RUNNER_ARGV = ["python3", "-I", f"{RUNNER_MOUNT}/sandbox_runner.py"]

OutputSink = Callable[[bytes | None, bytes | None], None]


class RunnerError(RuntimeError):
    """The runner went away or broke the protocol."""


class RunnerNotStarted(RunnerError):
    """The runner refused or lost a request before starting anything: safe to retry."""


@dataclass(frozen=True)
class RunnerResult:
    exit_code: int
    clean: bool  # every leftover process was killed afterwards
    oom_killed: bool = False  # the container's OOM-kill counter rose during the run


class RunnerChannel:
    """One attached runner; used by one exec at a time (the pool guarantees it)."""

    def __init__(self, stream: Any) -> None:
        # Keep the SocketIO docker-py returns: dropping it would close the socket.
        self._stream = stream
        self._sock: socket.socket = getattr(stream, "_sock", stream)
        self._mux = b""  # bytes of Docker's multiplexed stream not yet parsed
        self._pending = b""  # runner bytes not yet parsed into frames
        self.pid = 0
        self.broken = False

    @classmethod
    def attach(cls, api: docker.APIClient, container_id: str) -> RunnerChannel:
        params = {"stdin": 1, "stdout": 1, "stream": 1}
        return cls(api.attach_socket(container_id, params=params))

    def wait_ready(self, timeout_s: float) -> None:
        self._sock.settimeout(timeout_s)
        try:
            kind, payload = self._frame()
        except (TimeoutError, OSError) as exc:
            raise RunnerError(f"runner did not report ready: {exc}") from exc
        finally:
            self._sock.settimeout(None)
        if kind != READY:
            raise RunnerError(f"runner sent {kind!r} before ready")
        self.pid = int(json.loads(payload).get("pid", 0))

    def run(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        on_output: OutputSink,
        fork: bool = False,
    ) -> RunnerResult:
        """Run one command; output goes to ``on_output`` as it arrives.

        ``fork`` lets the runner fork itself for ``python3 -c CODE`` instead of
        starting a new interpreter.

        Raises :class:`RunnerNotStarted` when nothing ran, :class:`RunnerError`
        when the runner broke off mid-run (the container was killed, or died).
        """
        request = {"argv": argv, "cwd": cwd, "env": env, "umask": 0, "fork": fork}
        # ensure_ascii: no control bytes reach Docker's stdin (its detach keys).
        line = json.dumps(request, ensure_ascii=True).encode() + b"\n"
        if len(line) > MAX_REQUEST:
            raise RunnerNotStarted(f"request of {len(line)} bytes is too large for the runner")
        try:
            self._sock.sendall(line)
            kind, payload = self._frame()
        except (OSError, RunnerError) as exc:
            self.broken = True
            raise RunnerNotStarted(f"runner unreachable: {exc}") from exc
        if kind != STARTED:
            self.broken = True
            raise RunnerNotStarted(f"runner did not start the command: {_text(payload)}")
        while True:
            try:
                kind, payload = self._frame()
            except (OSError, RunnerError) as exc:
                self.broken = True
                raise RunnerError(f"runner stream ended mid-run: {exc}") from exc
            if kind == OUT:
                on_output(payload, None)
            elif kind == ERR:
                on_output(None, payload)
            elif kind == EXIT:
                info = json.loads(payload)
                return RunnerResult(
                    int(info["exit_code"]),
                    bool(info.get("clean")),
                    bool(info.get("oom_killed")),
                )
            else:
                self.broken = True
                raise RunnerError(f"runner failed mid-run: {_text(payload)}")

    def close(self) -> None:
        for closer in (self._stream.close, self._sock.close):
            try:
                closer()
            except OSError:
                pass

    # -- framing ----------------------------------------------------------
    def _frame(self) -> tuple[bytes, bytes]:
        while True:
            if len(self._pending) >= HEADER.size:
                kind, size = HEADER.unpack_from(self._pending)
                if size > MAX_FRAME:
                    raise RunnerError(f"runner frame of {size} bytes")
                end = HEADER.size + size
                if len(self._pending) >= end:
                    payload = self._pending[HEADER.size : end]
                    self._pending = self._pending[end:]
                    return kind, payload
            self._pending += self._docker_chunk()

    def _docker_chunk(self) -> bytes:
        """The next stdout chunk of Docker's multiplexed stream."""
        while True:
            if len(self._mux) >= DOCKER_HEADER.size:
                stream, size = DOCKER_HEADER.unpack_from(self._mux)
                if size > MAX_FRAME:
                    raise RunnerError(f"docker stream frame of {size} bytes")
                end = DOCKER_HEADER.size + size
                if len(self._mux) >= end:
                    chunk = self._mux[DOCKER_HEADER.size : end]
                    self._mux = self._mux[end:]
                    if stream == DOCKER_STDOUT:
                        return chunk
                    continue
            data = self._sock.recv(RECV)
            if not data:
                raise ConnectionResetError("runner stream closed")
            self._mux += data


def _text(payload: bytes) -> str:
    return payload[:500].decode("utf-8", errors="replace")
