"""Reading the platform's running state for admins: broker queues and breakers from
Redis, workers from a Celery broadcast, the costliest jobs from the spend ledger.

Everything here is a read. The Celery broadcast waits its whole timeout for
replies (it cannot know how many workers exist), so it is kept short and run
off the event loop; a dashboard refresh must not hang on a dead broker.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from celery import Celery
from redis import Redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.api.admin.ops.schemas import CircuitState, QueueDepth, TopJob, WorkerState
from services.common.contracts import keys
from services.common.contracts.tasks import AGENT_QUEUE, LIBRARY_QUEUE, SANDBOX_QUEUE
from services.common.models import Job, SpendRecord, User

QUEUES = (AGENT_QUEUE, SANDBOX_QUEUE, LIBRARY_QUEUE)
# Kombu's Redis transport keeps priority levels in sibling lists "<queue>\x06\x16<n>".
PRIORITY_SEP = "\x06\x16"
UNACKED_KEY = "unacked"
INSPECT_TIMEOUT_S = 0.8
MAX_BREAKERS = 200


def queue_depths(redis: Redis) -> list[QueueDepth]:
    depths = []
    for name in QUEUES:
        waiting = int(redis.llen(name))
        for key in redis.scan_iter(match=f"{name}{PRIORITY_SEP}*", count=100):
            waiting += int(redis.llen(key))
        depths.append(QueueDepth(name=name, waiting=waiting))
    return depths


def unacked(redis: Redis) -> int:
    return int(redis.hlen(UNACKED_KEY))


def workers(celery: Celery) -> tuple[list[WorkerState], str | None]:
    """Workers that answered the broadcast, with their queues and running tasks."""
    try:
        inspect = celery.control.inspect(timeout=INSPECT_TIMEOUT_S)
        queues: dict[str, Any] = inspect.active_queues() or {}
        active: dict[str, Any] = inspect.active() or {}
    except Exception as exc:  # a broker outage must not take the dashboard down
        return [], f"inspect failed: {type(exc).__name__}"
    names = sorted(set(queues) | set(active))
    return [
        WorkerState(
            name=name,
            queues=sorted(q.get("name", "") for q in queues.get(name) or []),
            active=len(active.get(name) or []),
        )
        for name in names
    ], None


def breakers(redis: Redis) -> list[CircuitState]:
    """Every circuit the router has touched recently (closed and clean ones are deleted)."""
    found = []
    for raw in redis.scan_iter(match=f"{keys.BREAKER_PREFIX}*", count=200):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        fields = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in redis.hgetall(key).items()
        }
        endpoint, model = keys.split_breaker(key)
        found.append(
            CircuitState(
                endpoint=endpoint,
                model=model,
                state=fields.get("state", "closed"),
                failures=int(fields.get("failures") or 0),
            )
        )
        if len(found) >= MAX_BREAKERS:
            break
    return sorted(found, key=lambda c: (c.state == "closed", c.endpoint, c.model))


def top_jobs(db: Session, *, limit: int, since: datetime | None) -> list[TopJob]:
    cost = func.sum(SpendRecord.cost_usd)
    stmt = (
        select(
            SpendRecord.job_id,
            Job.kind,
            Job.status,
            User.email,
            func.count(SpendRecord.id),
            cost,
            Job.created_at,
        )
        .outerjoin(Job, Job.id == SpendRecord.job_id)
        .outerjoin(User, User.id == Job.user_id)
        .where(SpendRecord.job_id.is_not(None))
        .group_by(SpendRecord.job_id, Job.kind, Job.status, User.email, Job.created_at)
        .order_by(cost.desc())
        .limit(limit)
    )
    if since is not None:
        stmt = stmt.where(SpendRecord.created_at >= since)
    return [
        TopJob(
            job_id=job_id,
            kind=kind,
            status=status,
            user_email=email,
            calls=calls,
            cost_usd=float(usd or 0),
            created_at=created,
        )
        for job_id, kind, status, email, calls, usd, created in db.execute(stmt).all()
    ]
