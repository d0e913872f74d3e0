"""Bounded parallel work inside one stage (paper notes, sections, checks).

Each unit records its own ledger step, so whatever finished before a crash,
a pause or the end of the time slice stays done. No new unit starts once
``should_stop`` says so or a unit raised; the units already running finish,
and the first exception is raised after them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")


def run_bounded(
    items: Sequence[T],
    work: Callable[[T], None],
    *,
    limit: int,
    should_stop: Callable[[], bool],
) -> bool:
    """Run ``work`` over ``items``, at most ``limit`` at once; True when all ran."""
    pending = list(items)
    running: set[Future[None]] = set()
    error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, limit), thread_name_prefix="survey") as pool:
        while pending or running:
            while pending and len(running) < limit and error is None and not should_stop():
                item = pending.pop(0)
                # Each unit joins the job's trace (the current span lives in the context).
                context = contextvars.copy_context()
                running.add(pool.submit(context.run, work, item))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                exc = future.exception()
                if exc is not None and error is None:
                    error = exc
    if error is not None:
        raise error
    return not pending
