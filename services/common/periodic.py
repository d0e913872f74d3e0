"""One background loop: a tick every period on a daemon thread, until stopped.

Every background loop of Leaflab's processes (the job and document sweepers, both
lease keepers, the sandbox janitor, the outage probe, the notification dispatchers,
the capability recheck, the schedule loop, the library store's page release) is a
:class:`Periodic`, so each behaves the same way: the first tick comes one period
after :meth:`Periodic.start`; a tick that raises is logged with what failed and the
next one runs (a database or Redis blip never ends a loop); :meth:`Periodic.stop`
ends the wait at once; and whether a tick runs once per cluster or once per process
is decided where the loop is built (``cluster_lock``), not inside its body.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from redis import Redis

log = logging.getLogger(__name__)

# Returned by a tick that has nothing more to do (a lease it renews was lost).
STOP = False


@dataclass(frozen=True)
class ClusterLock:
    """At most one process of the cluster runs a tick per period.

    Held for 90 % of the period (Redis ``SET NX PX``, never released): the next period's
    tick on any process finds it expired, and a process that dies holding it blocks
    no more than one period.
    """

    redis: Redis
    key: str

    def take(self, period_s: float) -> bool:
        return bool(self.redis.set(self.key, "1", nx=True, px=max(1, int(period_s * 900))))


class Periodic:
    """Runs ``tick`` every ``period_s`` on a daemon thread named ``name``.

    ``failure`` is the log line for a tick that raised. A tick returning :data:`STOP`
    ends the loop. ``join_s`` bounds how long :meth:`stop` waits for a running tick
    (0: it does not wait, as in a worker's shutdown, where the process is ending).
    ``on_exit`` runs on the loop's thread once the loop has ended (closing a client its
    ticks use, after the last of them).
    """

    def __init__(
        self,
        name: str,
        period_s: float,
        tick: Callable[[], bool | None],
        *,
        failure: str,
        cluster_lock: ClusterLock | None = None,
        join_s: float = 10.0,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._period = period_s
        self._tick = tick
        self._failure = failure
        self._lock = cluster_lock
        self._join_s = join_s
        self._on_exit = on_exit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread; a second call does nothing."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._join_s > 0:
            self._thread.join(timeout=self._join_s)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self._period):
                try:
                    if self._lock is not None and not self._lock.take(self._period):
                        continue  # another process runs this period's tick
                    if self._tick() is STOP:
                        return
                except Exception:  # the loop outlives any one failed tick
                    log.exception("%s", self._failure)
        finally:
            if self._on_exit is not None:
                self._on_exit()
