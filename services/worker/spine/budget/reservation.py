"""Reserve, settle and release budget: each one Postgres statement, correct under READ COMMITTED.

The guarantee: for every budget row, ``spent + reserved <= limit`` holds at
every commit, however many workers reserve at once. It holds because

- ``reserve`` locks every applicable budget row (user and project) in id order
  (``FOR UPDATE``: concurrent callers queue on the row, and a waiter re-reads
  the row's newest version once the lock is its own), decides on those locked
  values whether the worst case fits in *all* of them, and adds it to all of
  them or to none, in the same statement. Checking first and charging later
  (what gateways that overspend do) would let parallel calls all pass the check.
- ``settle`` gives the reservation back and charges the call's cost, capped at
  the room the budget had with that reservation back (``limit − spent −
  other reservations``), so ``spent <= limit`` holds whatever a server reports.
  What it reported beyond the charge (a reply longer than ``max_tokens`` is
  already clamped by pricing; a prompt larger than the estimate is cut here)
  is written as a ``budget_overruns`` row and marks the budget
  (``overrun_at``): from then on every reservation against it is refused until
  an admin sets the budget again, so one misbehaving server costs at most one
  call's excess per budget, visibly.
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

from services.common.metrics import BUDGET_OVERRUN_USD, BUDGET_OVERRUNS
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
               b.reserved_usd, b.reserved_tokens, b.overrun_at
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
        SELECT a.id, a.scope, a.overrun_at IS NOT NULL AS overrun,
               a.overrun_at IS NULL
               AND a.spent_usd + a.reserved_usd + v.usd <= a.usd_limit
               AND (a.token_limit IS NULL
                    OR a.spent_tokens + a.reserved_tokens + v.tokens <= a.token_limit) AS fits
          FROM applicable a CROSS JOIN verdict v
    ), decision AS (
        SELECT COALESCE(bool_and(fit.fits), true) AS ok,
               array_agg(fit.id ORDER BY fit.id) AS ids,
               array_agg(fit.scope) FILTER (WHERE NOT fit.fits) AS refused_by,
               array_agg(fit.scope) FILTER (WHERE fit.overrun) AS overrun_by
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
    SELECT d.ok, v.soft, d.ids, d.refused_by, d.overrun_by, v.usd, v.tokens,
           (SELECT count(*) FROM upd) AS updated, (SELECT count(*) FROM held) AS held
      FROM decision d, verdict v
    """
)

# Settling: give the reservation back, charge the cost within the budget's room,
# write the spend row and any overrun. A fragment of CTEs, so the ledger step that
# records a model reply can settle its call in the same statement
# (``services/worker/spine/recorder.py``); ``:settle`` false makes every part a
# no-op. Lock order: the reservation row, then the budget rows in id order (the
# sweeper takes the same order). ``locked`` reads each row's newest version once
# its lock is ours (READ COMMITTED re-reads a row a concurrent commit changed), so
# the room is computed on the values the update then changes.
SETTLE_CTES = """
    gone AS (
        DELETE FROM budget_reservations
         WHERE :settle AND id = :reservation_id
        RETURNING usd, tokens
    ), locked AS (
        SELECT b.id,
               b.usd_limit - b.spent_usd - b.reserved_usd
                   + COALESCE((SELECT usd FROM gone), 0) AS room_usd,
               b.token_limit - b.spent_tokens - b.reserved_tokens
                   + COALESCE((SELECT tokens FROM gone), 0) AS room_tokens
          FROM budgets b
         WHERE :settle AND b.id = ANY(CAST(:budget_ids AS uuid[]))
           AND (SELECT count(*) FROM gone) >= 0
         ORDER BY b.id
           FOR UPDATE
    ), room AS (
        -- One charge for every budget of the call (the tightest room decides), so the
        -- spend row and each budget agree.
        SELECT LEAST(CAST(:charge AS numeric), COALESCE(min(GREATEST(l.room_usd, 0)),
                     CAST(:charge AS numeric))) AS usd,
               -- (GREATEST skips NULLs: a budget without a token limit has no room to take.)
               LEAST(CAST(:used_tokens AS bigint), COALESCE(
                     min(CASE WHEN l.room_tokens IS NOT NULL THEN GREATEST(l.room_tokens, 0) END),
                     CAST(:used_tokens AS bigint))) AS tokens
          FROM locked l
    ), charged AS (
        UPDATE budgets b
           SET reserved_usd = b.reserved_usd - COALESCE((SELECT usd FROM gone), 0),
               reserved_tokens = b.reserved_tokens - COALESCE((SELECT tokens FROM gone), 0),
               spent_usd = b.spent_usd + r.usd,
               spent_tokens = b.spent_tokens + r.tokens,
               overrun_usd = b.overrun_usd + (CAST(:reported AS numeric) - r.usd),
               overrun_at = CASE
                   WHEN CAST(:reported AS numeric) > r.usd
                        OR CAST(:reported_tokens AS bigint) > r.tokens
                   THEN COALESCE(b.overrun_at, now()) ELSE b.overrun_at END,
               updated_at = now()
          FROM room r
         WHERE b.id IN (SELECT id FROM locked)
        RETURNING b.id, r.usd, r.tokens
    ), spend AS (
        INSERT INTO spend (id, user_id, project_id, job_id, model, input_tokens, output_tokens,
                           cached_tokens, cost_usd, estimated, created_at)
        SELECT :spend_id, :user_id, CAST(:project_id AS uuid), CAST(:job_id AS uuid), :model,
               :input_tokens, :output_tokens, :cached_tokens, (SELECT usd FROM room),
               :estimated, now()
         WHERE :settle AND :record_spend
        RETURNING 1
    ), overrun AS (
        -- One row per budget charged less than reported; a caller without budgets
        -- gets one row (budget NULL) when pricing clamped the reply.
        INSERT INTO budget_overruns (id, budget_id, user_id, project_id, job_id, model, reason,
                                     reported_usd, charged_usd, overrun_usd, reported_tokens,
                                     charged_tokens, created_at)
        SELECT gen_random_uuid(), t.id, CAST(:user_id AS uuid), CAST(:project_id AS uuid),
               CAST(:job_id AS uuid), CAST(:model AS varchar),
               CASE WHEN t.usd < CAST(:charge AS numeric)
                         OR t.tokens < CAST(:used_tokens AS bigint)
                    THEN 'limit' ELSE 'max_tokens' END,
               CAST(:reported AS numeric), t.usd, CAST(:reported AS numeric) - t.usd,
               CAST(:reported_tokens AS bigint), t.tokens, now()
          FROM (SELECT c.id, c.usd, c.tokens FROM charged c
                UNION ALL
                SELECT CAST(NULL AS uuid), CAST(:charge AS numeric),
                       CAST(:used_tokens AS bigint)
                 WHERE :settle AND :record_spend
                   AND cardinality(CAST(:budget_ids AS uuid[])) = 0) t
         WHERE CAST(:reported AS numeric) > t.usd
            OR CAST(:reported_tokens AS bigint) > t.tokens
        RETURNING overrun_usd
    )"""

SETTLE_SQL = text(
    f"""
    WITH {SETTLE_CTES}
    SELECT (SELECT count(*) FROM gone) AS released, (SELECT count(*) FROM charged) AS charged,
           (SELECT COALESCE(sum(overrun_usd), 0) FROM overrun) AS overrun_usd,
           (SELECT count(*) FROM overrun) AS overruns
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
    # Scopes refused because of an overrun since their budget was last set.
    overrun_by: list[str] = field(default_factory=list)
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
        overrun_by=list(row.overrun_by or []),
        usd=Decimal(row.usd),
        tokens=int(row.tokens),
    )


@dataclass(frozen=True)
class Settlement:
    """What a call is charged (``cost_usd``, output tokens clamped to the request's
    ``max_tokens``) and what the server reported (``reported_*``; None: the same);
    ``model`` None settles without a spend row (no call made)."""

    cost_usd: Decimal = Decimal(0)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    model: str | None = None
    reported_usd: Decimal | None = None
    reported_output_tokens: int | None = None
    estimated: bool = False

    @property
    def reported(self) -> Decimal:
        return self.cost_usd if self.reported_usd is None else max(self.reported_usd, self.cost_usd)

    @property
    def reported_tokens(self) -> int:
        output = self.output_tokens
        if self.reported_output_tokens is not None:
            output = max(output, self.reported_output_tokens)
        return self.input_tokens + output


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
            "reported": settlement.reported,
            "reported_tokens": settlement.reported_tokens,
            "estimated": settlement.estimated,
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
    "reported": Decimal(0),
    "reported_tokens": 0,
    "estimated": False,
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
    row = _SETTLE.one(writer, pending.params())
    count_overrun(pending, Decimal(row.overrun_usd), int(row.overruns))
    return bool(row.released)


def count_overrun(pending: PendingSettlement | None, usd: Decimal, rows: int) -> None:
    """The metrics of a settlement's overrun rows (``leaflab_budget_overrun_usd_total``)."""
    if pending is None or not rows:
        return
    BUDGET_OVERRUN_USD.inc(float(usd))
    BUDGET_OVERRUNS.inc(rows)
