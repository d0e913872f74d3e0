"""Runs the stack's processes, restarts any that crash, stops them all cleanly.

Each child runs in a session of its own: signals meant for `leaflab up` (a
closed terminal's SIGHUP, Ctrl-C's SIGINT, ``kill -- -PGID``) reach the
supervisor only, which then stops the stack in dependency order (:class:`Tier`).
Were they delivered to every process at once, the model endpoint would die
while a worker still waited on it. Children carry a parent-death signal, so a
supervisor that is killed outright takes them with it instead of leaving
orphans on the stack's ports.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import IO

from services.cli.up.deathsig import child_preexec

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0
# Logs hold request paths and errors: readable by the stack's owner only.
PRIVATE_UMASK = 0o077


class Tier(IntEnum):
    """Stop order, highest first: each tier stops only after the ones above it exited.

    Workers stop taking work and hand their jobs back while the model endpoint,
    the library, the API and the stores they use are all still up.
    """

    STORE = 0
    API = 1
    LIBRARY = 2
    MODEL = 3
    WORKER = 4


# A warm worker stop waits for the step in flight (a model call) to end and be
# recorded: longer than a web server's stop, which only closes connections.
WORKER_STOP_S = 45.0


@dataclass
class ProcessSpec:
    """One supervised process.

    ``stop_signal`` asks it to stop cleanly (PostgreSQL's fast shutdown is
    SIGINT). ``death_signal`` is what the kernel sends when the supervisor dies
    without stopping it: nobody is left to escalate, so it must end the process
    within seconds even when its stores are gone too (a service's clean
    shutdown can wait on a dead Redis forever). Services therefore get SIGKILL
    (durable jobs are recovered by the sweeper); the stores get their own
    clean-shutdown signal.
    """

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stop_signal: signal.Signals = signal.SIGTERM
    death_signal: signal.Signals = signal.SIGKILL
    user: str | None = None
    tier: Tier = Tier.API
    # How long a clean stop may take before the process is killed.
    stop_timeout_s: float = 15.0


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
        logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        logs_dir.chmod(0o700)

    def add(self, spec: ProcessSpec) -> Supervised:
        child = Supervised(spec=spec)
        self.children.append(child)
        self._start(child)
        return child

    def pids(self) -> dict[str, int]:
        """Live children by name."""
        return {c.spec.name: c.proc.pid for c in self.children if c.proc and c.proc.poll() is None}

    def _open_log(self, name: str) -> IO[bytes]:
        fd = os.open(self.logs_dir / f"{name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "ab")

    def _start(self, child: Supervised) -> None:
        if child.log_file is None:
            child.log_file = self._open_log(child.spec.name)
        env = {**os.environ, **self.base_env, **child.spec.env}
        child.proc = subprocess.Popen(
            child.spec.argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=child.log_file,
            stderr=subprocess.STDOUT,
            user=child.spec.user,
            start_new_session=True,  # no terminal signals: the supervisor stops it in order
            preexec_fn=child_preexec(
                child.spec.death_signal, parent_pid=os.getpid(), umask=PRIVATE_UMASK
            ),
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

    def exited(self, name: str) -> int | None:
        """The exit code of a child that is down now, else None."""
        for child in self.children:
            if child.spec.name == name and child.proc is not None:
                return child.proc.poll()
        return None

    def stop(self) -> None:
        """Stop every child tier by tier (:class:`Tier`), each tier's children in parallel."""
        self._stopping = True
        for tier in sorted({c.spec.tier for c in self.children}, reverse=True):
            group = [c for c in self.children if c.spec.tier == tier]
            for child in group:
                if child.proc is not None and child.proc.poll() is None:
                    log.info("stopping %s", child.spec.name)
                    child.proc.send_signal(child.spec.stop_signal)
            started = time.monotonic()
            for child in group:
                self._reap(child, started + child.spec.stop_timeout_s)

    def _reap(self, child: Supervised, deadline: float) -> None:
        proc = child.proc
        if proc is not None:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time; killing it", child.spec.name)
                proc.kill()
                proc.wait()
        if child.log_file:
            child.log_file.close()
            child.log_file = None
