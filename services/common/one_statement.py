"""One autocommitted statement on a pooled connection, below SQLAlchemy's execution layer.

The agent runtime's hot writes (a ledger step, a budget reservation and its
settlement) are each one statement of data-modifying CTEs. Sent through
``Engine.connect()`` + ``execute(text(...))`` each cost ≈ 0.35 ms of worker
CPU, of which the wire and psycopg take ≈ 0.08: the rest is SQLAlchemy's
per-execution machinery (connection wrapper, isolation-level characteristic set
and reset, event dispatch, result metadata). Several run per agent step, under
one GIL shared by every job of the worker, so this module sends them with
psycopg directly on a connection checked out of the same pool — the pool's
checkout check, size limits and disconnect handling still apply.

Errors keep SQLAlchemy's types (``sqlalchemy.exc.OperationalError`` …, with
parameters hidden) so callers handle them as before, and a connection that
failed is discarded by the pool rather than handed to the next caller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy import Engine, exc
from sqlalchemy.dialects.postgresql import psycopg as pg_psycopg
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import TextClause

_DIALECT = pg_psycopg.dialect()


class OneStatement:
    """A ``text()`` statement compiled once to psycopg's ``%(name)s`` form."""

    def __init__(self, clause: TextClause) -> None:
        self.clause = clause
        self.sql = str(clause.compile(dialect=_DIALECT))

    def one(self, engine: Engine, params: Mapping[str, Any]) -> Any:
        """Run in autocommit (the statement is its own transaction); the first row, or None."""
        rows = self._run(engine, params, first_only=True)
        return rows[0] if rows else None

    def all(self, engine: Engine, params: Mapping[str, Any]) -> list[Any]:
        """Run in autocommit; every row (named tuples)."""
        return self._run(engine, params, first_only=False)

    def _run(self, engine: Engine, params: Mapping[str, Any], *, first_only: bool) -> list[Any]:
        fairy = engine.raw_connection()
        try:
            conn = fairy.driver_connection
            assert isinstance(conn, psycopg.Connection)
            try:
                # The pool's connections run in transactions for the ORM: this one
                # statement commits on its own, and the mode is put back before checkin.
                conn.autocommit = True
                try:
                    with conn.cursor(row_factory=namedtuple_row) as cur:
                        # Prepared at once on each connection, not after psycopg's
                        # default five runs. The workers' connections also ask for
                        # generic plans (db.GENERIC_PLANS), so the server plans these
                        # CTE statements once per connection instead of at every step.
                        cur.execute(self.sql, params, prepare=True)
                        if first_only:
                            row = cur.fetchone()
                            return [] if row is None else [row]
                        return cur.fetchall()
                finally:
                    conn.autocommit = False
            except psycopg.Error as err:
                raise _mapped(fairy, conn, err, self.sql) from err
        finally:
            fairy.close()


def _mapped(fairy: Any, conn: psycopg.Connection[Any], err: psycopg.Error, sql: str) -> Exception:
    """``err`` as SQLAlchemy's type, parameters hidden; a lost connection is invalidated
    (never back into the pool)."""
    lost = conn.closed or conn.broken or isinstance(err, psycopg.OperationalError)
    if lost:
        fairy.invalidate(err)
    return exc.DBAPIError.instance(
        sql,
        None,
        err,
        psycopg.Error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=_DIALECT,
    )


class Transaction:
    """Statements of one transaction on one pooled connection (see :func:`transaction`)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self.last_sql = ""

    def one(self, statement: OneStatement, params: Mapping[str, Any]) -> Any:
        """The first row (a named tuple), or None."""
        self.last_sql = statement.sql
        with self._conn.cursor(row_factory=namedtuple_row) as cur:
            cur.execute(statement.sql, params, prepare=True)
            return cur.fetchone()

    def execute(self, statement: OneStatement, params: Mapping[str, Any]) -> None:
        """A statement that returns no rows."""
        self.last_sql = statement.sql
        with self._conn.cursor() as cur:
            cur.execute(statement.sql, params, prepare=True)


@contextmanager
def transaction(engine: Engine) -> Iterator[Transaction]:
    """A transaction of prepared statements below SQLAlchemy, committed when the block
    ends and rolled back if it raises: for a short hot transaction of a few statements
    (the lease's admission check and UPDATE), where ``Session`` machinery and per-run
    planning cost more than the statements do."""
    fairy = engine.raw_connection()
    try:
        conn = fairy.driver_connection
        assert isinstance(conn, psycopg.Connection)
        tx = Transaction(conn)
        try:
            yield tx  # psycopg opens the transaction at the first statement
            conn.commit()
        except psycopg.Error as err:
            raise _mapped(fairy, conn, err, tx.last_sql) from err
        except BaseException:
            if not (conn.closed or conn.broken):
                conn.rollback()
            raise
    finally:
        fairy.close()  # the pool's reset is free: no transaction is open any more


def rows_of(
    target: Session | Engine, statement: OneStatement, params: Mapping[str, Any]
) -> list[Any]:
    """``statement``'s rows: in the caller's ``Session`` (its transaction and snapshot),
    or as one autocommitted statement on an ``Engine``."""
    if isinstance(target, Session):
        return list(target.execute(statement.clause, params).all())
    return statement.all(target, params)
