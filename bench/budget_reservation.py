"""What budgets add to a model call: reserve + settle cost, and reservation throughput.

Per call the worker runs two autocommit statements (reserve the worst case
against the user's and the project's budget; settle to the real cost and write
the spend row). Reported:

- sequential p50/p99 of reserve + settle, against a baseline measured in the
  same run: one plain single-row ``UPDATE budgets SET updated_at = now()`` (one
  round trip, the floor of any write); goal: p50 added ≤ 1 ms;
- reservations/s with ``--callers`` threads (default 200) sharing a pool of
  ``--connections`` (Postgres here allows ~100 in all), every caller reserving
  and settling against the same two budget rows (the worst contention a lab
  sees: one user in one project), and the same for the plain UPDATE;
- the invariant after the run: nothing left reserved, spend = calls × cost.

    .venv/bin/python -m bench.budget_reservation [--calls 500 --callers 200 --per-caller 10]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from collections.abc import Callable
from decimal import Decimal

from sqlalchemy import Engine, create_engine, event, text

from bench.harness import percentile
from bench.scratch_stack import scratch_stack
from services.common.db import build_sessionmaker
from services.common.models import Budget, Project, User
from services.worker.spine.budget.reservation import (
    RESERVE_SQL,
    SETTLE_SQL,
    Ask,
    Payer,
    Settlement,
    reserve_budget,
    settle_budget,
)

COST = Decimal("0.000100")
ASK = Ask(usd=Decimal("0.001"), tokens=3000, fast_usd=Decimal("0.001"), fast_tokens=3000)
PLAIN_UPDATE = text("UPDATE budgets SET updated_at = now() WHERE id = :id")


def _bounded_engine(url: str, connections: int) -> Engine:
    # Never more than ``connections``: the Postgres here is shared (~100 in all),
    # so extra callers queue for a pooled connection as a worker's threads do.
    return create_engine(url, pool_size=connections, max_overflow=0, pool_pre_ping=True)


def _setup(factory) -> tuple[Payer, uuid.UUID]:  # type: ignore[no-untyped-def]
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:6]}@lab.test")
        project = Project(name=f"bench-{uuid.uuid4().hex[:6]}")
        db.add_all([user, project])
        db.flush()
        budgets = [
            Budget(scope="user", user_id=user.id, usd_limit=Decimal(10**6), token_limit=10**12),
            Budget(scope="project", project_id=project.id, usd_limit=Decimal(10**6)),
        ]
        for b in budgets:
            b.period, b.reset_day = "total", 1
            b.spent_usd = b.reserved_usd = Decimal(0)
            b.spent_tokens = b.reserved_tokens = 0
        db.add_all(budgets)
        db.flush()
        return Payer(user_id=user.id, project_id=project.id, job_id=None, fence=1), budgets[0].id


def _call(writer: Engine, payer: Payer) -> bool:
    held = reserve_budget(writer, payer=payer, ask=ASK, soft_default=0.8)
    if held.ok:
        settle_budget(
            writer,
            payer=payer,
            reservation=held,
            settlement=Settlement(cost_usd=COST, input_tokens=500, output_tokens=100, model="b"),
        )
    return held.ok


def _sequential(fn: Callable[[], object], n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _concurrent(fn: Callable[[], object], callers: int, per_caller: int) -> float:
    """Operations per second with ``callers`` threads starting together."""
    barrier = threading.Barrier(callers + 1)

    def run() -> None:
        barrier.wait()
        for _ in range(per_caller):
            fn()

    threads = [threading.Thread(target=run) for _ in range(callers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return callers * per_caller / (time.perf_counter() - start)


def _fmt(label: str, ms: list[float]) -> str:
    return (
        f"{label}: p50 {percentile(ms, 50):.3f} ms, p99 {percentile(ms, 99):.3f} ms (n={len(ms)})"
    )


def _without_flush_wait(url: str, payer: Payer, budget_id: uuid.UUID, calls: int) -> None:
    """The same pair of measurements with commits not waiting for the WAL flush: on a
    busy disk the fsync of each commit dominates, and this shows the statements' own cost."""
    engine = _bounded_engine(url, 2)

    @event.listens_for(engine, "connect")
    def _async_commit(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        with dbapi_conn.cursor() as cur:
            cur.execute("SET synchronous_commit TO off")
        dbapi_conn.commit()

    writer = engine.execution_options(isolation_level="AUTOCOMMIT")

    def plain() -> None:
        with writer.connect() as conn:
            conn.execute(PLAIN_UPDATE, {"id": budget_id})

    _sequential(plain, 20)
    _sequential(lambda: _call(writer, payer), 20)
    base = _sequential(plain, calls)
    both = _sequential(lambda: _call(writer, payer), calls)
    print(_fmt("  synchronous_commit=off: baseline plain UPDATE", base))
    print(_fmt("  synchronous_commit=off: reserve + settle", both))
    print(
        "  synchronous_commit=off: added per model call: "
        f"p50 {percentile(both, 50) - percentile(base, 50):.3f} ms"
    )
    engine.dispose()


def _server_ms(writer: Engine, sql: str, params: dict[str, object], n: int) -> list[float]:
    """Planning + execution time Postgres itself reports (EXPLAIN ANALYZE): what a
    statement costs the server, whatever the client machine's load adds on top."""
    times = []
    with writer.connect() as conn:
        for _ in range(n):
            lines = [
                r[0]
                for r in conn.execute(text(f"EXPLAIN (ANALYZE, SUMMARY ON) {sql}"), params).all()
            ]
            times.append(
                sum(float(x.split(": ")[1].split(" ")[0]) for x in lines if x.endswith(" ms"))
            )
    return times


def _server_figures(writer: Engine, payer: Payer, budget_id: uuid.UUID, n: int) -> None:
    reserve = {
        "user_id": payer.user_id,
        "project_id": payer.project_id,
        "job_id": None,
        "fence": 1,
        "usd": ASK.usd,
        "tokens": ASK.tokens,
        "fast_usd": ASK.usd,
        "fast_tokens": ASK.tokens,
        "soft_default": 0.8,
    }
    res = [
        _server_ms(writer, RESERVE_SQL.text, {**reserve, "reservation_id": uuid.uuid4()}, 1)[0]
        for _ in range(n)
    ]
    settle = {
        "settle": True,
        "reservation_id": uuid.uuid4(),
        "budget_ids": [budget_id],
        "charge": ASK.usd,  # gives back what each reserve above held
        "used_tokens": ASK.tokens,
        "user_id": payer.user_id,
        "project_id": payer.project_id,
        "job_id": None,
        "model": "b",
        "input_tokens": 500,
        "output_tokens": 100,
        "cached_tokens": 0,
        "record_spend": True,
        # What the server reported: the same as charged (no overrun on this path).
        "reported": ASK.usd,
        "reported_tokens": ASK.tokens,
        "estimated": False,
    }
    sett = [
        _server_ms(writer, SETTLE_SQL.text, {**settle, "spend_id": uuid.uuid4()}, 1)[0]
        for _ in range(n)
    ]
    base = _server_ms(writer, PLAIN_UPDATE.text, {"id": budget_id}, n)
    print(_fmt("server-side (planning + execution): baseline plain UPDATE", base))
    print(_fmt("server-side (planning + execution): reserve", res))
    print(_fmt("server-side (planning + execution): settle", sett))
    print(
        "server-side added per model call (reserve + settle - baseline): "
        f"p50 {percentile(res, 50) + percentile(sett, 50) - percentile(base, 50):.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--callers", type=int, default=200)
    parser.add_argument("--per-caller", type=int, default=10)
    parser.add_argument("--connections", type=int, default=20)
    args = parser.parse_args()
    with scratch_stack("budget", redis_db=False) as stack:
        engine = _bounded_engine(stack.database_url, args.connections)
        writer = engine.execution_options(isolation_level="AUTOCOMMIT")
        payer, budget_id = _setup(build_sessionmaker(engine))

        def plain() -> None:
            with writer.connect() as conn:
                conn.execute(PLAIN_UPDATE, {"id": budget_id})

        def budgeted() -> None:
            _call(writer, payer)

        for fn in (plain, budgeted):  # warm the pool and the plans
            _sequential(fn, 20)
        base = _sequential(plain, args.calls)
        both = _sequential(budgeted, args.calls)
        added = percentile(both, 50) - percentile(base, 50)
        print(f"load average {os.getloadavg()[0]:.1f}")
        print(_fmt("baseline: one plain single-row UPDATE (autocommit)", base))
        print(_fmt("reserve + settle per model call (2 statements, user + project)", both))
        print(f"added per model call vs the baseline UPDATE: p50 {added:.3f} ms (goal <= 1 ms)")
        plain_rate = _concurrent(plain, args.callers, args.per_caller)
        rate = _concurrent(budgeted, args.callers, args.per_caller)
        _without_flush_wait(stack.database_url, payer, budget_id, args.calls)
        print(
            f"throughput, {args.callers} concurrent callers on {args.connections} connections: "
            f"{rate:.0f} reservations+settlements/s; baseline plain UPDATE of the same row: "
            f"{plain_rate:.0f}/s"
        )
        with engine.connect() as conn:
            row = conn.execute(
                text("SELECT reserved_usd, spent_usd FROM budgets WHERE id = :id"),
                {"id": budget_id},
            ).one()
        calls = 2 * (20 + args.calls) + args.callers * args.per_caller
        print(
            f"invariant after the run: reserved ${row.reserved_usd}, spent ${row.spent_usd} "
            f"= {calls} calls x ${COST}: {row.spent_usd == COST * calls}"
        )
        # Last: these statements leave reservations behind on purpose (never settled).
        _server_figures(writer, payer, budget_id, min(args.calls, 200))
        engine.dispose()


if __name__ == "__main__":
    main()
