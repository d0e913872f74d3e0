"""One watchdog thread per Docker backend for every running exec's limits.

An exec's hard wall-clock timeout and its workspace disk poll are enforced from
outside the container. Instead of a thread started (and joined) per exec, each
exec registers a :class:`Watch` here: one long-lived thread keeps the watches in
a heap by their next due time (the deadline, or the next disk poll) and sleeps
until the earliest. A warm exec that ends in milliseconds costs a heap push and
a flag, and the thread wakes at most once for it.

Guarantee: a watched exec is killed (its ``kill`` called with ``"timeout"``) once
its deadline passes, and with the poll's reason once a disk poll reports one;
after :meth:`Watch.stop` returns, no kill of that exec is underway or will follow.
The polls run on this thread one after another, so a slow walk of one large
workspace delays the other execs' checks by that walk (bounded by the workspace
cap), never skips them.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# A poll's verdict: the kill reason, or None while the exec is within its limits.
Poll = Callable[[], str | None]
Kill = Callable[[str], None]


class Watch:
    """The limits of one running exec; checked by the watchdog thread only."""

    def __init__(self, *, timeout_s: float, poll: Poll, poll_every_s: float, kill: Kill) -> None:
        now = time.monotonic()
        self.deadline = now + timeout_s
        self._poll, self._every, self._kill = poll, poll_every_s, kill
        self._next_poll = now + poll_every_s
        self._lock = threading.Lock()  # held while checking: stop() waits for a check
        self._stopped = False

    @property
    def due(self) -> float:
        return min(self.deadline, self._next_poll)

    def stop(self) -> None:
        """The exec is over: no kill from now on (waits for a check in progress)."""
        with self._lock:
            self._stopped = True

    def check(self) -> float | None:
        """Kill past a limit; returns when to check again, None when done with it."""
        with self._lock:
            if self._stopped:
                return None
            now = time.monotonic()
            if now >= self.deadline:
                self._stopped = True
                self._kill("timeout")
                return None
            if now >= self._next_poll:
                self._next_poll = now + self._every
                reason = self._poll()
                if reason is not None:
                    self._stopped = True
                    self._kill(reason)
                    return None
            return self.due

    @property
    def stopped(self) -> bool:
        return self._stopped


class Watchdog:
    """The heap of watches and the one thread that checks them (started on first use)."""

    def __init__(self, name: str = "sandbox-watchdog") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()  # ties broken by arrival, never by comparing watches
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, *, timeout_s: float, poll: Poll, poll_every_s: float, kill: Kill) -> Watch:
        """Watch one exec from now on; call ``stop()`` on the result when it is over."""
        watch = Watch(timeout_s=timeout_s, poll=poll, poll_every_s=poll_every_s, kill=kill)
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._closed = False
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (watch.due, next(self._order), watch))
            if self._heap[0][2] is watch:
                self._cond.notify()  # earlier than what the thread sleeps for
        return watch

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()

    def _next(self) -> Watch | None:
        """Wait for the earliest watch to fall due and take it off the heap."""
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][2].stopped:
                    heapq.heappop(self._heap)  # ended execs are dropped as they surface
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay <= 0:
                    return heapq.heappop(self._heap)[2]
                self._cond.wait(delay)
            return None

    def _loop(self) -> None:
        while (watch := self._next()) is not None:
            try:
                again = watch.check()
            except Exception:  # a failed poll must not end the watch over every exec
                log.exception("sandbox watchdog check failed")
                again = None if watch.stopped else watch.due
            if again is not None:
                with self._cond:
                    heapq.heappush(self._heap, (again, next(self._order), watch))
