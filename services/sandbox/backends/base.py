"""The sandbox backend interface: one request in, one outcome out.

A backend runs one command in an isolated, resource-limited environment with
the session workspace at ``/workspace`` and reports what happened. It never
falls back to running code on the host: a backend that cannot be used raises
:class:`SandboxUnavailable` (the factory picks one by settings).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKSPACE_MOUNT = "/workspace"
# Events a backend reports while it runs (type, data); the service publishes them.
LifecycleSink = Callable[[str, dict[str, Any]], None]


class SandboxUnavailable(RuntimeError):
    """The configured backend cannot run anything on this machine (or not this request)."""

    code = "sandbox_unavailable"  # what the exec's caller sees as the error code


class SandboxNetworkUnavailable(SandboxUnavailable):
    """A network-enabled exec cannot be given the outside world without this host and
    private ranges here: it is refused, never run on a less isolated network."""

    code = "sandbox_network_unavailable"


@dataclass(frozen=True)
class ExecRequest:
    argv: list[str]
    workspace: Path
    session_key: str
    timeout_s: float
    allow_network: bool = False
    stdin: bytes | None = None
    # The size the workspace may reach during this run (its cap, or what its
    # user has left); a backend that can watch kills the run past it.
    disk_limit_bytes: int | None = None
    # The workspace's size as the exec was admitted (the growth quota counts from
    # it); None: the backend measures it as the run starts.
    workspace_bytes: int | None = None


@dataclass
class ExecOutcome:
    exit_code: int | None
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    timed_out: bool = False
    killed_reason: str | None = None  # timeout | output_limit | workspace_quota
    # The kernel's OOM killer ended a process of this run (the memory limit was hit).
    oom_killed: bool = False
    duration_ms: float = 0.0
    warm: bool = False
    sandbox_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)


class SandboxBackend(ABC):
    """Runs commands in isolation. Implementations are thread-safe."""

    name: str

    @abstractmethod
    def execute(self, request: ExecRequest, on_event: LifecycleSink) -> ExecOutcome:
        """Run ``request.argv`` to completion or until killed by a limit."""

    def start(self) -> None:  # noqa: B027 - optional hook, most backends need nothing
        """Prepare (warm pool, janitor); called once when the worker starts."""

    def reap_orphans(self, alive: Callable[[str], bool] | None = None) -> int:
        """Remove sandboxes left behind by dead workers (``alive(owner)`` says
        whether an owner still heartbeats); returns how many."""
        return 0

    def spares(self) -> int:
        """Warm sandboxes ready for a new session right now (0 without a pool)."""
        return 0

    def forget(self, session_key: str) -> None:  # noqa: B027 - optional hook
        """Drop any warm sandbox kept for ``session_key`` (its session is deleted)."""

    def maintain(self) -> None:  # noqa: B027 - optional hook
        """Periodic upkeep (idle eviction, pool refill)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Remove everything this backend started."""
