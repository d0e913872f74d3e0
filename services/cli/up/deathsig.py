"""Children that die with their parent, whatever kills it (Linux ``PR_SET_PDEATHSIG``).

A supervisor stopped by SIGINT/SIGTERM/SIGHUP stops its children itself; one
killed with SIGKILL (or crashing) cannot. The kernel then delivers the
child's parent-death signal, so no API, worker or database outlives it
holding ports and data files.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl: Callable[..., int] = libc.prctl
    return prctl


_PRCTL = _prctl()


def child_preexec(
    death_signal: signal.Signals, *, parent_pid: int, umask: int | None = None
) -> Callable[[], None]:
    """A ``Popen(preexec_fn=…)`` that arms the parent-death signal (and sets a umask).

    It runs in the child after ``Popen`` changed its user, since a credential
    change clears the parent-death signal. If the parent already died between
    fork and this call, the signal would never come: the child kills itself.
    """

    def preexec() -> None:
        if umask is not None:
            os.umask(umask)
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), death_signal)

    return preexec
