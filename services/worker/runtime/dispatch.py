"""Handing a job to whichever agent worker takes the next ``agent.advance`` message."""

from __future__ import annotations

import uuid

from celery import Celery

from services.common.task_names import ADVANCE_TASK, AGENT_QUEUE


def send_advance(celery: Celery, job_id: uuid.UUID) -> None:
    """Ask for one more slice of ``job_id``; safe to send twice (the lease dedups)."""
    # Nobody reads the result: registering for it would make a send stall while
    # the result backend (Redis) is down, instead of failing fast to the sweeper.
    celery.send_task(ADVANCE_TASK, args=[str(job_id)], queue=AGENT_QUEUE, ignore_result=True)
