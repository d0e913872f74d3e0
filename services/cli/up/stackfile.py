"""One live stack per home, and a record of what it runs: $LEAFLAB_HOME/stack.json.

The home is claimed with an exclusive ``flock`` on ``stack.lock``, held for
the supervisor's life: the kernel releases it when the process dies however it
dies, so a crashed stack never blocks the next start and a live one is never
taken over. ``stack.json`` tells users (and a second ``leaflab up``) which
pid and ports the live stack has.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any


class HomeInUse(RuntimeError):
    """Another live stack holds this home."""


@dataclass
class StackRecord:
    pid: int
    pgid: int
    home: str
    api_url: str
    ports: dict[str, int] = field(default_factory=dict)
    children: dict[str, int] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def describe(self) -> str:
        ports = ", ".join(f"{name} {port}" for name, port in sorted(self.ports.items()))
        return f"pid {self.pid}, API {self.api_url}, ports: {ports}"


def read_record(home: Path) -> StackRecord | None:
    """The stack recorded in ``home``, or None (also for an unreadable file)."""
    try:
        data: dict[str, Any] = json.loads((home / "stack.json").read_text())
        return StackRecord(**data)
    except (OSError, ValueError, TypeError):
        return None


class StackHome:
    """The claimed home of a running stack."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._lock: IO[str] | None = None

    def claim(self) -> None:
        """Take the home, or raise :class:`HomeInUse` naming the stack that has it."""
        self.home.mkdir(parents=True, exist_ok=True)
        lock = open(self.home / "stack.lock", "a")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            record = read_record(self.home)
            who = record.describe() if record else "pid unknown"
            raise HomeInUse(
                f"LEAFLAB_HOME {self.home} is in use by a running Leaflab stack ({who}); "
                "stop it (Ctrl-C in its terminal, or `kill PID`) or use another LEAFLAB_HOME"
            ) from None
        self._lock = lock

    def write(self, record: StackRecord) -> None:
        write_private(self.home / "stack.json", json.dumps(asdict(record), indent=2) + "\n")

    def release(self) -> None:
        """Forget the record and free the home (a no-op unless this process claimed it)."""
        if self._lock is None:
            return
        (self.home / "stack.json").unlink(missing_ok=True)
        self._lock.close()  # closing the descriptor drops the flock
        self._lock = None


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read (created 0600, never wider)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def internal_token(home: Path) -> str:
    """The stack's service-to-service secret: random, kept in ``home/internal.token`` (0600).

    Kept across restarts of the same home, so processes of a restarted stack
    agree with each other; a fresh home gets a fresh token.
    """
    return home_secret(home, "internal.token")


def metrics_token(home: Path) -> str:
    """The token every ``/metrics`` of the stack asks for (the API's is never open), kept
    in ``home/metrics.token`` (0600) like the internal token; Prometheus reads it from the
    scrape config ``up`` writes."""
    return home_secret(home, "metrics.token")


def home_secret(home: Path, name: str) -> str:
    """A random secret kept in ``home/name`` (0600), the same across restarts of the home."""
    path = home / name
    try:
        token = path.read_text().strip()
        if len(token) >= 32:
            path.chmod(0o600)
            return token
    except OSError:
        pass
    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token
