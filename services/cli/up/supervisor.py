"""Runs the stack's processes, restarts any that crash, stops them all cleanly."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0


@dataclass
class ProcessSpec:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Supervised:
    spec: ProcessSpec
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float = 1.0
    restart_at: float | None = None
    restarts: int = 0
    log_file: IO[bytes] | None = None


class Supervisor:
    def __init__(self, logs_dir: Path, base_env: dict[str, str]) -> None:
        self.logs_dir = logs_dir
        self.base_env = base_env
        self.children: list[Supervised] = []
        self._stopping = False
        logs_dir.mkdir(parents=True, exist_ok=True)

    def add(self, spec: ProcessSpec) -> Supervised:
        child = Supervised(spec=spec)
        self.children.append(child)
        self._start(child)
        return child

    def _start(self, child: Supervised) -> None:
        if child.log_file is None:
            child.log_file = open(self.logs_dir / f"{child.spec.name}.log", "ab")  # noqa: SIM115
        env = {**os.environ, **self.base_env, **child.spec.env}
        child.proc = subprocess.Popen(
            child.spec.argv,
            env=env,
            stdout=child.log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us, and we stop children in order
        )
        child.started_at = time.monotonic()
        child.restart_at = None

    def poll(self) -> list[str]:
        """Restart crashed children (with backoff); returns the names restarted now."""
        restarted: list[str] = []
        now = time.monotonic()
        for child in self.children:
            if self._stopping or child.proc is None:
                continue
            code = child.proc.poll()
            if code is None:
                if now - child.started_at > STABLE_AFTER_S:
                    child.backoff_s = 1.0
                continue
            if child.restart_at is None:
                log.warning(
                    "%s exited with %s; restarting in %.0fs", child.spec.name, code, child.backoff_s
                )
                child.restart_at = now + child.backoff_s
                child.backoff_s = min(child.backoff_s * 2, MAX_BACKOFF_S)
            elif now >= child.restart_at:
                child.restarts += 1
                self._start(child)
                restarted.append(child.spec.name)
        return restarted

    def stop(self, timeout_s: float = 15.0) -> None:
        self._stopping = True
        for child in reversed(self.children):
            if child.proc and child.proc.poll() is None:
                os.killpg(child.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for child in reversed(self.children):
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait()
            if child.log_file:
                child.log_file.close()
