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

from collections.abc import Mapping
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
                        # default five runs: the server plans these CTE statements
                        # once per connection instead of at every step.
                        cur.execute(self.sql, params, prepare=True)
                        if first_only:
                            row = cur.fetchone()
                            return [] if row is None else [row]
                        return cur.fetchall()
                finally:
                    conn.autocommit = False
            except psycopg.Error as err:
                self._fail(fairy, conn, err)
                raise AssertionError("unreachable") from err
        finally:
            fairy.close()

    def _fail(self, fairy: Any, conn: psycopg.Connection[Any], err: psycopg.Error) -> None:
        lost = conn.closed or conn.broken or isinstance(err, psycopg.OperationalError)
        if lost:
            fairy.invalidate(err)  # never back into the pool
        raise exc.DBAPIError.instance(
            self.sql,
            None,
            err,
            psycopg.Error,
            hide_parameters=True,
            connection_invalidated=lost,
            dialect=_DIALECT,
        ) from err


def rows_of(
    target: Session | Engine, statement: OneStatement, params: Mapping[str, Any]
) -> list[Any]:
    """``statement``'s rows: in the caller's ``Session`` (its transaction and snapshot),
    or as one autocommitted statement on an ``Engine``."""
    if isinstance(target, Session):
        return list(target.execute(statement.clause, params).all())
    return statement.all(target, params)
