"""Database engine and session construction (built at service start, never at import)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker


def build_engine(url: str, *, pool_size: int = 10) -> Engine:
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size * 2,
        pool_pre_ping=True,
        # Error text (and so any log line or span that carries it) must not
        # include statement parameters: they are users' messages and inputs.
        hide_parameters=True,
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
