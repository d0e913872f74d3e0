"""Reserve, settle and release budget: each one Postgres statement, correct under READ COMMITTED.

The guarantee: for every budget row, ``spent + reserved <= limit`` holds at
every commit, however many workers reserve at once. It holds because

- ``reserve`` locks every applicable budget row (user and project) in id order
  (``FOR UPDATE``: concurrent callers queue on the row, and a waiter re-reads
  the row's newest version once the lock is its own), decides on those locked
  values whether the worst case fits in *all* of them, and adds it to all of
  them or to none, in the same statement. Checking first and charging later
  (what gateways that overspend do) would let parallel calls all pass the check.
- ``settle`` gives the reservation back and adds the real cost, which is at most
  the worst case, so a settled budget never rises above what was reserved.
- a reservation belongs to a job's lease (job id + fence); the sweeper releases
  those whose lease is gone (a dead worker), so money is never held forever.

Locks are always taken in budget-id order, so reservers never deadlock each other.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from services.common.one_statement import OneStatement

# A monthly budget whose period ended starts from zero spend (in-flight
# reservations stay held); its next end is the first reset after now.
_ROLLED = "(b.period = 'monthly' AND b.period_ends_at <= now())"
_NEXT_END = (
    "b.period_ends_at + make_interval(months => 1 + ("
    "extract(year from age(now(), b.period_ends_at)) * 12"
    " + extract(month from age(now(), b.period_ends_at)))::int)"
)

RESERVE_SQL = text(
    f"""
    WITH applicable AS (
        SELECT b.id, b.scope, b.usd_limit, b.token_limit,
               COALESCE(b.soft_threshold, :soft_default) AS soft_threshold,
               CASE WHEN {_ROLLED} THEN 0 ELSE b.spent_usd END AS spent_usd,
               CASE WHEN {_ROLLED} THEN 0 ELSE b.spent_tokens END AS spent_tokens,
               b.reserved_usd, b.reserved_tokens
          FROM budgets b
         WHERE (b.scope = 'user' AND b.user_id = :user_id)
            OR (b.scope = 'project' AND b.project_id = CAST(:project_id AS uuid))
         ORDER BY b.id
           FOR UPDATE
    ), ask AS (
        -- Past the soft threshold of any budget the call goes to the fast tier,
        -- so the worst case to reserve is the fast model's.
        SELECT COALESCE(bool_or(
                   a.spent_usd + a.reserved_usd >= a.soft_threshold * a.usd_limit
                   OR (a.token_limit IS NOT NULL
                       AND a.spent_tokens + a.reserved_tokens >= a.soft_threshold * a.token_limit)
               ), false) AS soft
          FROM applicable a
    ), verdict AS (
        SELECT ask.soft,
               CASE WHEN ask.soft THEN CAST(:fast_usd AS numeric) ELSE CAST(:usd AS numeric) END
                   AS usd,
               CASE WHEN ask.soft THEN CAST(:fast_tokens AS bigint) ELSE CAST(:tokens AS bigint)
                   END AS tokens
          FROM ask
    ), fit AS (
        SELECT a.id, a.scope,
               a.spent_usd + a.reserved_usd + v.usd <= a.usd_limit
               AND (a.token_limit IS NULL
                    OR a.spent_tokens + a.reserved_tokens + v.tokens <= a.token_limit) AS fits
          FROM applicable a CROSS JOIN verdict v
    ), decision AS (
        SELECT COALESCE(bool_and(fit.fits), true) AS ok,
               array_agg(fit.id ORDER BY fit.id) AS ids,
               array_agg(fit.scope) FILTER (WHERE NOT fit.fits) AS refused_by
          FROM fit
    ), upd AS (
        UPDATE budgets b
           SET reserved_usd = b.reserved_usd + v.usd,
               reserved_tokens = b.reserved_tokens + v.tokens,
               spent_usd = CASE WHEN {_ROLLED} THEN 0 ELSE b.spent_usd END,
               spent_tokens = CASE WHEN {_ROLLED} THEN 0 ELSE b.spent_tokens END,
               period_ends_at = CASE WHEN {_ROLLED} THEN {_NEXT_END} ELSE b.period_ends_at END,
               updated_at = now()
          FROM decision d, verdict v
         WHERE d.ok AND b.id = ANY(d.ids)
        RETURNING b.id
    ), held AS (
        INSERT INTO budget_reservations (id, job_id, fence, budget_ids, usd, tokens, created_at)
        SELECT :reservation_id, CAST(:job_id AS uuid), :fence, d.ids, v.usd, v.tokens, now()
          FROM decision d, verdict v
         WHERE d.ok AND d.ids IS NOT NULL
        RETURNING id
    )
    SELECT d.ok, v.soft, d.ids, d.refused_by, v.usd, v.tokens,
           (SELECT count(*) FROM upd) AS updated, (SELECT count(*) FROM held) AS held
      FROM decision d, verdict v
    """
)

# Settling: give the reservation back, charge the real cost, write the spend row.
# A fragment of CTEs, so the ledger step that records a model reply can settle
# its call in the same statement (``services/worker/runtime/recorder.py``);
# ``:settle`` false makes every part a no-op. Lock order: the reservation row,
# then the budget rows in id order (the sweeper takes the same order).
SETTLE_CTES = """
    gone AS (
        DELETE FROM budget_reservations
         WHERE :settle AND id = :reservation_id
        RETURNING usd, tokens
    ), locked AS (
        SELECT b.id FROM budgets b
         WHERE :settle AND b.id = ANY(CAST(:budget_ids AS uuid[]))
           AND (SELECT count(*) FROM gone) >= 0
         ORDER BY b.id
           FOR UPDATE
    ), charged AS (
        UPDATE budgets b
           SET reserved_usd = b.reserved_usd - COALESCE((SELECT usd FROM gone), 0),
               reserved_tokens = b.reserved_tokens - COALESCE((SELECT tokens FROM gone), 0),
               spent_usd = b.spent_usd + :charge,
               spent_tokens = b.spent_tokens + :used_tokens,
               updated_at = now()
         WHERE b.id IN (SELECT id FROM locked)
        RETURNING b.id
    ), spend AS (
        INSERT INTO spend (id, user_id, project_id, job_id, model, input_tokens, output_tokens,
                           cached_tokens, cost_usd, created_at)
        SELECT :spend_id, :user_id, CAST(:project_id AS uuid), CAST(:job_id AS uuid), :model,
               :input_tokens, :output_tokens, :cached_tokens, :charge, now()
         WHERE :settle AND :record_spend
        RETURNING 1
    )"""

SETTLE_SQL = text(
    f"""
    WITH {SETTLE_CTES}
    SELECT (SELECT count(*) FROM gone) AS released, (SELECT count(*) FROM charged) AS charged
    """
)

RELEASE_ORPHANS_SQL = text(
    """
    WITH gone AS (
        DELETE FROM budget_reservations r
         WHERE r.created_at < now() - make_interval(secs => :grace_s)
           AND NOT EXISTS (
               SELECT 1 FROM jobs j
                WHERE j.id = r.job_id AND j.fence = r.fence AND j.lease_until > now())
        RETURNING r.budget_ids, r.usd, r.tokens
    ), per_budget AS (
        SELECT b_id, sum(g.usd) AS usd, sum(g.tokens) AS tokens
          FROM gone g, unnest(g.budget_ids) AS b_id
         GROUP BY b_id
    ), locked AS (
        SELECT b.id FROM budgets b
         WHERE b.id IN (SELECT b_id FROM per_budget)
         ORDER BY b.id
           FOR UPDATE
    ), upd AS (
        UPDATE budgets b
           SET reserved_usd = b.reserved_usd - p.usd,
               reserved_tokens = b.reserved_tokens - p.tokens,
               updated_at = now()
          FROM per_budget p
         WHERE b.id = p.b_id AND b.id IN (SELECT id FROM locked)
        RETURNING b.id
    )
    SELECT (SELECT count(*) FROM gone) AS released
    """
)

_RESERVE = OneStatement(RESERVE_SQL)
_SETTLE = OneStatement(SETTLE_SQL)


@dataclass(frozen=True)
class Ask:
    """What a call may cost at worst, on the normal tier and on the fast tier."""

    usd: Decimal
    tokens: int
    fast_usd: Decimal
    fast_tokens: int


@dataclass(frozen=True)
class Reservation:
    """The outcome of :func:`reserve_budget`; ``ok`` False means nothing was reserved."""

    ok: bool
    soft: bool
    id: uuid.UUID | None
    budget_ids: list[uuid.UUID] = field(default_factory=list)
    refused_by: list[str] = field(default_factory=list)
    usd: Decimal = Decimal(0)
    tokens: int = 0


@dataclass(frozen=True)
class Payer:
    """Whose budgets a call is charged to, and under which lease."""

    user_id: uuid.UUID
    project_id: uuid.UUID | None
    job_id: uuid.UUID | None
    fence: int


def reserve_budget(writer: Engine, *, payer: Payer, ask: Ask, soft_default: float) -> Reservation:
    """Reserve the worst case against every applicable budget, or nothing (one statement).

    ``writer`` runs in autocommit: the statement is its own transaction.
    """
    reservation_id = uuid.uuid4()
    row = _RESERVE.one(
        writer,
        {
            "user_id": payer.user_id,
            "project_id": payer.project_id,
            "job_id": payer.job_id,
            "fence": payer.fence,
            "usd": ask.usd,
            "tokens": ask.tokens,
            "fast_usd": ask.fast_usd,
            "fast_tokens": ask.fast_tokens,
            "soft_default": soft_default,
            "reservation_id": reservation_id,
        },
    )
    ids = list(row.ids or [])
    return Reservation(
        ok=bool(row.ok),
        soft=bool(row.soft),
        id=reservation_id if row.held else None,
        budget_ids=ids,
        refused_by=list(row.refused_by or []),
        usd=Decimal(row.usd),
        tokens=int(row.tokens),
    )


@dataclass(frozen=True)
class Settlement:
    """What a call really cost; ``model`` None settles without a spend row (no call made)."""

    cost_usd: Decimal = Decimal(0)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    model: str | None = None


@dataclass(frozen=True)
class PendingSettlement:
    """A settlement to run, alone (:func:`settle_budget`) or inside a ledger write."""

    payer: Payer
    reservation: Reservation
    settlement: Settlement

    def params(self) -> dict[str, Any]:
        """The parameters of :data:`SETTLE_CTES`."""
        payer, settlement = self.payer, self.settlement
        return {
            "settle": True,
            "reservation_id": self.reservation.id,
            "budget_ids": self.reservation.budget_ids,
            "charge": settlement.cost_usd,
            "used_tokens": settlement.input_tokens + settlement.output_tokens,
            "spend_id": uuid.uuid4(),
            "user_id": payer.user_id,
            "project_id": payer.project_id,
            "job_id": payer.job_id,
            "model": settlement.model or "",
            "input_tokens": settlement.input_tokens,
            "output_tokens": settlement.output_tokens,
            "cached_tokens": settlement.cached_tokens,
            "record_spend": settlement.model is not None,
        }


# The parameters of SETTLE_CTES when a statement that carries them settles nothing.
NO_SETTLEMENT: dict[str, Any] = {
    "settle": False,
    "reservation_id": None,
    "budget_ids": [],
    "charge": Decimal(0),
    "used_tokens": 0,
    "spend_id": None,
    "user_id": None,
    "project_id": None,
    "model": "",
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_tokens": 0,
    "record_spend": False,
}


def settle_budget(
    writer: Engine, *, payer: Payer, reservation: Reservation, settlement: Settlement
) -> bool:
    """Give the reservation back, charge the real cost and write the spend row (one statement).

    Returns whether the reservation was still held (False when the sweeper had
    already released it: the cost is charged all the same, since it was spent).
    """
    return settle_pending(
        writer, PendingSettlement(payer=payer, reservation=reservation, settlement=settlement)
    )


def settle_pending(writer: Engine, pending: PendingSettlement) -> bool:
    """:func:`settle_budget` for a settlement already built (``BudgetGate.pending``)."""
    return bool(_SETTLE.one(writer, pending.params()).released)


def release_orphans(factory: sessionmaker[Session], *, grace_s: float = 0.0) -> int:
    """Release reservations whose job no longer holds the lease they were made under."""
    with factory() as db, db.begin():
        # Bounded: a budget row held by a cut-off worker's open transaction must not
        # stall the sweeper (and the job recovery after it); the next sweep retries.
        db.execute(text("SET LOCAL lock_timeout = '2s'"))
        return int(db.execute(RELEASE_ORPHANS_SQL, {"grace_s": grace_s}).scalar_one())
