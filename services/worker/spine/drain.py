"""Draining: a worker told to stop hands its jobs on at the next step boundary.

On SIGTERM (a rolling update, a scale-down) Celery stops taking messages and
waits for running tasks. Draining makes that wait short and useful: each job
finishes the step it is in, records it, releases its lease and is enqueued
again at once, so another worker continues it immediately instead of after
the lease TTL; a message that arrives at a draining worker is handed back the
same way without taking the lease.
"""

from __future__ import annotations

import threading

_draining = threading.Event()


def start_draining() -> None:
    _draining.set()


def draining() -> bool:
    return _draining.is_set()
