"""The stack's ports: the API's is the user's choice, every internal one is picked free.

Picking internal ports (library, model simulator, each worker's metrics
server) at start instead of fixing them lets stacks, test runs and users on
one machine run side by side; they are recorded in ``stack.json`` and the
Prometheus targets file, so nothing has to guess them.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass, field

import psutil


class PortInUse(RuntimeError):
    """A port the stack needs is taken; the message names the holder when it can."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def holder_of(port: int) -> str:
    """Who listens on ``port``: a Leaflab stack (its home) or a pid and program name."""
    try:
        listeners = [
            c.pid
            for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
        ]
    except psutil.Error:
        listeners = []
    for pid in listeners:
        try:
            proc = psutil.Process(pid)
            home = proc.environ().get("LEAFLAB_HOME")
            if home:
                return f"a Leaflab stack with LEAFLAB_HOME={home} (pid {pid}, {proc.name()})"
            return f"pid {pid} ({proc.name()})"
        except psutil.Error:
            return f"pid {pid}"
    return "another process"


def require_free(host: str, port: int, what: str) -> None:
    """Raise :class:`PortInUse` naming the holder when ``port`` is taken."""
    if not port_is_free(host, port):
        raise PortInUse(
            f"port {port} ({what}) is in use by {holder_of(port)}; "
            f"stop that process or choose another port (--port)"
        )


@dataclass
class StackPorts:
    """Every TCP port one stack listens on."""

    api: int
    library: int
    model_sim: int | None = None
    local_model: int | None = None  # the llama.cpp server of ``--local-model``
    # Prometheus exposition port of each Celery worker process, by process name.
    metrics: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        ports = {"api": self.api, "library": self.library}
        if self.model_sim is not None:
            ports["model-sim"] = self.model_sim
        if self.local_model is not None:
            ports["local-model"] = self.local_model
        ports.update({f"{name}-metrics": port for name, port in self.metrics.items()})
        return ports


def choose_ports(
    *,
    host: str,
    api_port: int,
    model_sim_port: int | None,
    with_model_sim: bool,
    with_local_model: bool = False,
) -> StackPorts:
    """Check the requested ports and pick free ones for everything else."""
    require_free(host, api_port, "API")
    if with_model_sim and model_sim_port:
        require_free("127.0.0.1", model_sim_port, "model simulator")
    sim = (model_sim_port or free_port()) if with_model_sim else None
    local = free_port() if with_local_model else None
    return StackPorts(api=api_port, library=free_port(), model_sim=sim, local_model=local)
