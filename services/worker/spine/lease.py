"""Job leases with fencing tokens.

A worker advances a job only while it holds the job's lease. Taking the lease
bumps ``fence``; every write the holder makes re-reads the fence under a row
lock and aborts with :class:`LeaseLost` if another worker has taken over.
One :class:`LeaseKeeper` thread per process renews all leases it holds in a
single statement, so hundreds of concurrent jobs cost one UPDATE per period.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import autocommit
from services.common.models import Job
from services.common.one_statement import OneStatement, transaction
from services.common.periodic import Periodic
from services.worker.spine.admission import ADMISSIBLE, EARLIER_IN_SESSION, admit, mark_waiting
from services.worker.spine.membership import access_verdict


class LeaseLost(Exception):
    """Another worker holds the job now; stop without writing anything more."""

    @classmethod
    def refused(cls, lease: Lease, current: int | None) -> LeaseLost:
        # One greppable line: operators (and the fencing tests) look for it.
        now = "the job is gone" if current is None else f"fence {lease.fence} < {current}"
        return cls(f"job {lease.job_id}: lease lost, {now}, write refused")


@dataclass
class Lease:
    job_id: uuid.UUID
    fence: int
    owner: str
    attempts: int = 1
    # Slices in a row before this one whose worker was lost without a step finished.
    lost_slices: int = 0
    lost: threading.Event = field(default_factory=threading.Event)
    # Taken while an earlier job of the session is still active (a resumed one):
    # the slice must wait for it, not run.
    behind_earlier: bool = False
    # The job row as the lease's UPDATE left it (detached): the slice starts from
    # it instead of reading the row again.
    job: Job | None = field(default=None, repr=False, compare=False)
    # Whether the job's user may act in its project, read by the lease's UPDATE
    # (``membership.access_verdict``); None: not read (a lease made by hand).
    access: str | None = None


ACQUIRE_SQL = text(
    f"""
    UPDATE jobs
       SET lease_owner = :owner,
           lease_until = now() + make_interval(secs => :ttl),
           fence = fence + 1,
           attempts = attempts + 1,
           -- An owner still set means the last slice never handed the job back
           -- (release, finish and suspend all clear it): its worker was lost.
           lost_slices = CASE WHEN lease_owner IS NULL THEN lost_slices
                              ELSE lost_slices + 1 END,
           status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
           started_at = COALESCE(started_at, now()),
           updated_at = now()
     WHERE id = :job_id
       AND status IN ('queued', 'running')
       AND (lease_until IS NULL OR lease_until < now())
       AND {ADMISSIBLE}
    RETURNING jobs.*, {EARLIER_IN_SESSION.format(j="jobs")} AS behind_earlier,
              -- The slice's first access check, in this statement (dispatch.py).
              {access_verdict(user="jobs.user_id", project="jobs.project_id")} AS access
    """
)
_ACQUIRE = OneStatement(ACQUIRE_SQL)


def acquire(
    engine: Engine,
    *,
    job_id: uuid.UUID,
    owner: str,
    ttl_s: float,
    per_user_cap: int = 0,
) -> Lease | None:
    """Take the job's lease if it is free; None when another worker holds it, it is
    done, or (queued) it may not start yet (``admission``: the per-user cap, its
    session's order)."""
    with transaction(engine) as tx:
        if not admit(tx, job_id=job_id, cap=per_user_cap):
            return None
        row = tx.one(
            _ACQUIRE, {"owner": owner, "ttl": ttl_s, "job_id": job_id, "cap": per_user_cap}
        )
        if row is None:
            mark_waiting(tx, job_id=job_id)
    if row is None:
        return None
    columns = row._asdict()
    behind = bool(columns.pop("behind_earlier"))
    access = str(columns.pop("access"))
    return Lease(
        job_id=job_id,
        fence=int(row.fence),
        owner=owner,
        attempts=int(row.attempts),
        lost_slices=int(row.lost_slices),
        behind_earlier=behind,
        job=Job(**columns),
        access=access,
    )


def release(factory: sessionmaker[Session], lease: Lease) -> None:
    """Give the lease up early so the next advance can start at once."""
    with autocommit(factory) as db:
        db.execute(
            text(
                # The slice ended with its worker alive: not a lost one.
                "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, lost_slices = 0 "
                "WHERE id = :id AND fence = :fence"
            ),
            {"id": lease.job_id, "fence": lease.fence},
        )


def check_fence(db: Session, lease: Lease) -> tuple[str, bool]:
    """Lock the job row and verify the fence; returns (status, cancel_requested)."""
    row = db.execute(
        text("SELECT fence, status, cancel_requested FROM jobs WHERE id = :id FOR UPDATE"),
        {"id": lease.job_id},
    ).first()
    if row is None or int(row.fence) != lease.fence:
        lease.lost.set()
        raise LeaseLost.refused(lease, None if row is None else int(row.fence))
    return str(row.status), bool(row.cancel_requested)


@contextmanager
def fenced_effect(
    factory: sessionmaker[Session], lease: Lease, *, hold_limit_s: float
) -> Iterator[None]:
    """Apply an effect outside Postgres (a workspace edit) only while the fence holds.

    The ledger's fence guards rows, not files: a worker frozen (or cut off) between
    recording an edit's start and applying it would otherwise apply it after
    another worker took the job over and applied it too. Inside this block the job
    row is locked with the fence checked, so a stale worker is refused before it
    touches the workspace, and a takeover's lease UPDATE waits for the lock until
    the effect is done (then sees the file in its post-state and records it as
    applied). ``hold_limit_s`` bounds how long a worker frozen inside the block may
    keep the lock: Postgres ends its session after that (a liveness bound; only a
    freeze inside the few microseconds of the write itself stays unfenced).
    """
    with factory() as db, db.begin():
        db.execute(
            text("SELECT set_config('idle_in_transaction_session_timeout', :ms, true)"),
            {"ms": str(max(1, int(hold_limit_s * 1000)))},
        )
        check_fence(db, lease)
        yield


class LeaseKeeper:
    """Renews every lease this process holds, in one UPDATE per period."""

    def __init__(self, factory: sessionmaker[Session], *, ttl_s: float) -> None:
        self._factory = factory
        self._ttl = ttl_s
        self._leases: dict[uuid.UUID, Lease] = {}
        self._lock = threading.Lock()
        # Every process renews its own leases: no cluster lock. A DB blip must not end
        # the keeper; the leases just age until the next period.
        self._loop = Periodic(
            "lease-keeper", ttl_s / 3, self.renew_all, failure="lease renewal failed", join_s=0
        )
        self._loop.start()

    def hold(self, lease: Lease) -> None:
        with self._lock:
            self._leases[lease.job_id] = lease

    def drop(self, lease: Lease) -> None:
        with self._lock:
            self._leases.pop(lease.job_id, None)

    def stop(self) -> None:
        self._loop.stop()

    def renew_all(self) -> None:
        with self._lock:
            leases = list(self._leases.values())
        if not leases:
            return
        ids = [lease.job_id for lease in leases]
        fences = [lease.fence for lease in leases]
        # One statement in autocommit: the row locks end with it. In a BEGIN…COMMIT a
        # host cut off between the UPDATE and the COMMIT left its backend idle in
        # transaction holding every job it renewed, so none could be taken over
        # until TCP declared the client dead (about 40 s; hours before keepalives).
        with autocommit(self._factory) as db:
            renewed = db.execute(
                text(
                    """
                    UPDATE jobs j SET lease_until = now() + make_interval(secs => :ttl)
                      FROM unnest(CAST(:ids AS uuid[]), CAST(:fences AS bigint[])) AS h(id, fence)
                     WHERE j.id = h.id AND j.fence = h.fence
                       -- a job finished since the last period has released its lease
                       AND j.lease_owner IS NOT NULL
                    RETURNING j.id
                    """
                ),
                {"ttl": self._ttl, "ids": ids, "fences": fences},
            ).all()
        kept = {row[0] for row in renewed}
        for lease in leases:
            if lease.job_id not in kept:
                lease.lost.set()
