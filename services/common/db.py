"""Database engine and session construction (built at service start, never at import)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, text
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
}


def build_engine(url: str, *, pool_size: int = 10) -> Engine:
    """A pooled engine that survives a database restart.

    ``pool_pre_ping`` tests each connection on checkout, so after a restart the
    dead connections in the pool are replaced at the next transaction boundary
    instead of failing the first query of every pooled connection. A transaction
    already running when the server goes away still fails: callers recover at
    their own boundary (the API answers 503, a worker's job is resumed from its
    ledger).
    """
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        pool_pre_ping=True,
        # Error text (and so any log line or span that carries it) must not
        # include statement parameters: they are users' messages and inputs.
        hide_parameters=True,
        connect_args=dict(CONNECT_ARGS) if url.startswith("postgresql") else {},
        future=True,
    )


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


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        try:
            row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
        except Exception:
            return None
    return row[0] if row else None
