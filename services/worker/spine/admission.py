"""Admission: when a queued job may start, so one user cannot crowd out the others.

A queued job becomes ``running`` only by taking its lease, and a queued job is
admitted only when

- its user has fewer than ``max_running_jobs_per_user`` *counted* running jobs,
  and
- no earlier job of its session is still active (turns of a session run in
  order; the earlier one wakes it when it finishes).

Counted are running jobs that do work of their own: a batch parent (a
coordinator that holds no worker between its children's finishes) is not
counted and never capped, and neither is a subagent child (it runs inside its
parent's slot; capping it could deadlock a parent waiting for it). A batch's
children are ordinary capped jobs.

The cap is exact under concurrency: admission takes a per-user advisory lock
(held until the acquiring transaction commits) and re-counts under it, so two
workers can never both admit the last free slot. A refused job simply stays
``queued`` and holds no worker; nothing is lost, because it is picked up
again when one of its user's jobs finishes (``finish.FINISH_SQL``) and by
the sweeper, which dispatches queued jobs round-robin by user within each
user's free slots (``sweeper.DUE_SQL``). A refused job's ``enqueued_at`` is
cleared (no message of it is in flight any more), so the sweeper can tell
jobs waiting for a slot from jobs already sent to take one.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text

from services.common.one_statement import OneStatement, Transaction

# Is job ``j`` subject to the cap (and counted while running)?
CAPPED = """(
    {j}.kind <> 'batch'
    AND NOT EXISTS (SELECT 1 FROM jobs sub_p
                     WHERE sub_p.id = {j}.parent_job_id AND sub_p.kind <> 'batch')
)"""

# How many counted jobs the user of job ``j`` has running.
RUNNING_COUNT = (
    """(
    SELECT count(*) FROM jobs cnt
     WHERE cnt.user_id = {j}.user_id AND cnt.status = 'running'
       AND """
    + CAPPED.format(j="cnt")
    + """
)"""
)

# Does an earlier job of the same session still have to finish first?
EARLIER_IN_SESSION = """EXISTS (
    SELECT 1 FROM jobs e
     WHERE e.session_id = {j}.session_id AND e.created_at < {j}.created_at
       AND e.status IN ('queued', 'running', 'waiting_approval', 'waiting_model', 'paused',
                        'budget_exhausted')
)"""

# Appended to the lease's UPDATE: a queued job must be admissible; re-slices
# of running jobs pass unchanged. ``:cap`` ≤ 0 switches the cap off.
ADMISSIBLE = (
    "(jobs.status <> 'queued' OR ((:cap <= 0 OR NOT "
    + CAPPED.format(j="jobs")
    + " OR "
    + RUNNING_COUNT.format(j="jobs")
    + " < :cap) AND NOT "
    + EARLIER_IN_SESSION.format(j="jobs")
    + "))"
)

# The cheap check and, when it finds room, the user's advisory lock, in one
# round trip: the lock is taken only for a queued capped job under the cap (a
# correlated subquery in CASE runs only when its branch is chosen). The lease
# UPDATE that follows is a new statement, so it re-counts with a snapshot taken
# after the lock was granted.
PRECHECK_SQL = text(
    "SELECT p.status, p.capped, p.running, "
    "CASE WHEN p.status = 'queued' AND p.capped AND p.running < :cap THEN "
    "(SELECT true FROM (SELECT pg_advisory_xact_lock(:namespace, "
    "hashtext(CAST(p.user_id AS text)))) AS lock) END AS locked "
    "FROM (SELECT j.status, j.user_id, "
    + CAPPED.format(j="j")
    + " AS capped, "
    + RUNNING_COUNT.format(j="j")
    + " AS running FROM jobs j WHERE j.id = :job_id) AS p"
)

NOT_IN_FLIGHT_SQL = text(
    "UPDATE jobs SET enqueued_at = NULL WHERE id = :job_id AND status = 'queued'"
)

_PRECHECK = OneStatement(PRECHECK_SQL)
_NOT_IN_FLIGHT = OneStatement(NOT_IN_FLIGHT_SQL)

# Two-key advisory lock (PRECHECK_SQL): a namespace of our own, then the user.
LOCK_NAMESPACE = 0x1EAF


def mark_waiting(tx: Transaction, *, job_id: uuid.UUID) -> None:
    """A queued job whose lease was refused holds no message any more.

    Called when the lease's UPDATE refused a job that :func:`admit` let through:
    its re-count under the user's lock found the last slot taken meanwhile (or an
    earlier job of its session still active). Left marked as sent, the job would
    count as holding a slot and stay out of every finish's hand-off until the
    sweeper's ``requeue_after_s`` had passed (30 s by default) — a job stranded
    while its user's slots stood idle. A running job (a duplicate message, a live
    lease) is untouched: the statement changes only queued rows.
    """
    tx.execute(_NOT_IN_FLIGHT, {"job_id": job_id})


def admit(tx: Transaction, *, job_id: uuid.UUID, cap: int) -> bool:
    """Whether taking ``job_id``'s lease may go ahead, serialising admission per user.

    Cheap refusals first: a queued job of a user already at the cap is refused
    without any lock. Otherwise the user's advisory lock is taken (until this
    transaction ends) and the lease UPDATE re-checks :data:`ADMISSIBLE` under it.
    """
    if cap <= 0:
        return True
    row = tx.one(_PRECHECK, {"job_id": job_id, "cap": cap, "namespace": LOCK_NAMESPACE})
    if row is None or row.status != "queued" or not row.capped:
        return True
    if int(row.running) >= cap:
        # Its message is spent: say so, so the sweeper counts it as waiting for
        # a slot rather than as already on its way to one.
        tx.execute(_NOT_IN_FLIGHT, {"job_id": job_id})
        return False
    return True
