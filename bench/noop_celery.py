"""A Celery app with one no-op task: the baseline cost of a Celery round trip.

Started as a worker by ``bench.spine_concurrency`` on the same broker as the
agent workers (``BENCH_BROKER_URL``), with the same pool and settings shape.
"""

from __future__ import annotations

import os

from celery import Celery

app = Celery("bench-noop", broker=os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/0"))
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 4


@app.task(name="bench.noop", ignore_result=True)
def noop() -> None:
    return None
