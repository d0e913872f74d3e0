"""Database engine and session construction (built at service start, never at import)."""

from __future__ import annotations

import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc, text
from sqlalchemy.orm import Session, sessionmaker

# libpq connection options that bound how long a lost database can stall a caller:
# a connect gives up after 10 s instead of hanging on an unreachable host, and a
# connection whose peer vanished (a partition, a killed host) is found dead by TCP
# keepalives within about a minute instead of the kernel's two hours.
CONNECT_ARGS = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    # The same on the server's side of each connection: a backend whose client was cut
    # off mid-transaction (a partitioned worker) otherwise holds that transaction's row
    # locks for the kernel's two hours, and the jobs behind them cannot be taken over.
    # tcp_user_timeout covers a backend blocked sending to a vanished client.
    # client_connection_check_interval covers one that is not reading either: a statement
    # waiting on a lock looks at its socket only when the lock is granted, so it lived
    # (with every lock its transaction held) as long as the blocker did; with the check
    # it ends once TCP has declared the client dead (measured: 45 s, not 120+).
    "options": "-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3"
    " -c tcp_user_timeout=30000 -c client_connection_check_interval=5000",
}


# For the agent workers' hot statements (prepared on first use, see one_statement):
# PostgreSQL plans a prepared statement afresh at each of its first five runs on a
# connection ("custom" plans) and may keep doing so; a generic plan is made once per
# connection and reused. Measured on the ledger write (pg_stat_statements): ≈ 1.5 ms
# to plan at each run, as long as running it took. Every statement the workers prepare
# looks rows up by key, so the generic plan is the same plan. Statements that are not
# prepared are unaffected.
GENERIC_PLANS = " -c plan_cache_mode=force_generic_plan"


def build_engine(url: str, *, pool_size: int = 10, generic_plans: bool = False) -> Engine:
    """A pooled engine that survives a database restart.

    Each connection is checked on checkout, so after a restart the dead
    connections in the pool are replaced at the next transaction boundary
    instead of failing the first query of every pooled connection. For
    PostgreSQL the check costs no round trip (:func:`_drop_if_server_hung_up`);
    elsewhere it is SQLAlchemy's ``pool_pre_ping``. A transaction already
    running when the server goes away still fails: callers recover at their own
    boundary (the API answers 503, a worker's job is resumed from its ledger).
    """
    postgres = url.startswith("postgresql")
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        pool_pre_ping=not postgres,
        # Error text (and so any log line or span that carries it) must not
        # include statement parameters: they are users' messages and inputs.
        hide_parameters=True,
        connect_args=_connect_args(generic_plans) if postgres else {},
        future=True,
    )
    if postgres:
        event.listen(engine, "checkout", _drop_if_server_hung_up)
    return engine


def _connect_args(generic_plans: bool) -> dict[str, Any]:
    args = dict(CONNECT_ARGS)
    if generic_plans:
        args["options"] = f"{args['options']}{GENERIC_PLANS}"
    return args


def _drop_if_server_hung_up(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Refuse a pooled connection the server has closed, without a round trip.

    A pooled connection is idle: the server has nothing to say on it. When the
    server goes away (a restart, a crash, ``pg_terminate_backend``) it closes
    the socket, often after a FATAL notice, so the socket turns readable. A
    ``SELECT 1`` per checkout (``pool_pre_ping``) found the same thing at the
    price of a round trip on every transaction — two to three per agent step.
    A connection cut off without a goodbye (a partition) is not found here, nor
    was it by a ping that would hang; TCP keepalives bound that case.
    ``DisconnectionError`` makes the pool discard it and connect afresh.
    """
    conn = getattr(dbapi_connection, "pgconn", None)
    if conn is None or getattr(dbapi_connection, "closed", False):
        raise exc.DisconnectionError("connection closed")
    try:
        poller = select.poll()  # not select(): a busy worker may hold fds above 1024
        poller.register(conn.socket, select.POLLIN)
        events = poller.poll(0)
    except Exception as err:  # psycopg raises its own errors for a dead handle
        raise exc.DisconnectionError(f"connection unusable: {err}") from err
    if events:
        raise exc.DisconnectionError("the server closed (or wrote on) an idle connection")


def build_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commits on success, rolls back on any exception."""
    session = factory()
    try:
        with session.begin():
            yield session
    finally:
        session.close()


@contextmanager
def autocommit(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose every statement commits on its own, with no BEGIN/COMMIT.

    For reads that need no shared snapshot and for writes that are one
    statement each: psycopg opens a transaction with a separate ``BEGIN``
    round trip, and a read session closes it with a ``ROLLBACK`` — two round
    trips of nothing around the work. The connection's isolation level is
    restored when it goes back to the pool.
    """
    with factory() as db:
        db.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        yield db
        db.commit()  # ends the ORM's own transaction; nothing reaches the server


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        try:
            row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
        except Exception:
            return None
    return row[0] if row else None
