"""Who runs a sandbox: worker identities, and whether one is still alive.

An owner id is ``host/pid/random``. It labels the worker's containers and its
in-flight executions, so another worker can tell when they were orphaned.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable


def new_owner() -> str:
    """Identity of this worker, used in container labels: host/pid/random."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def owner_alive(owner: str, alive: Callable[[str], bool] | None) -> bool:
    """Whether a container's owner still runs: same-host pid check, else heartbeat.

    A live pid on this host counts as alive even without a heartbeat: workers
    configured with another Redis (another deployment or test run on the same
    Docker daemon) heartbeat where this one cannot see, and must not lose
    their containers to this janitor.
    """
    host, _, rest = owner.partition("/")
    pid_text = rest.split("/", 1)[0]
    if host == socket.gethostname() and pid_text.isdigit():
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        else:
            return True
    return alive(owner) if alive is not None else True
