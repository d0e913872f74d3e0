"""The runtime's hot writes below SQLAlchemy's execution layer keep the pool's promises.

``OneStatement`` borrows a pooled connection, runs one statement in autocommit
and returns it. A caller must see SQLAlchemy's error types with parameters
hidden, a broken connection must never return to the pool, and the connection
must go back in transaction mode (a later ORM transaction still rolls back).
"""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from sqlalchemy import exc, text

from services.common.db import build_engine, build_sessionmaker
from services.common.one_statement import OneStatement, transaction
from tests.conftest import PG_ADMIN_URL, Stack

BACKEND = OneStatement(text("SELECT pg_backend_pid() AS pid"))
SLEEP = OneStatement(text("SELECT pg_sleep(:s) AS slept"))
BOOM = OneStatement(text("SELECT CAST(:secret AS text) AS s, 1 / :zero AS boom"))
INSERT = OneStatement(text("INSERT INTO one_statement_probe (v) VALUES (:v) RETURNING v"))
INSERT_QUIET = OneStatement(text("INSERT INTO one_statement_probe (v) VALUES (:v)"))


@pytest.fixture()
def engine(stack: Stack):  # type: ignore[no-untyped-def]
    eng = build_engine(stack.database_url, pool_size=1)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS one_statement_probe (v text UNIQUE)"))
        conn.execute(text("TRUNCATE one_statement_probe"))
    yield eng
    eng.dispose()


def test_a_statement_commits_on_its_own_and_the_connection_returns_transactional(engine) -> None:  # type: ignore[no-untyped-def]
    assert INSERT.one(engine, {"v": "a"}).v == "a"
    factory = build_sessionmaker(engine)
    with pytest.raises(RuntimeError), factory() as db, db.begin():
        db.execute(text("INSERT INTO one_statement_probe (v) VALUES ('b')"))
        raise RuntimeError("roll back")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT v FROM one_statement_probe ORDER BY v")).scalars()
        assert list(rows) == ["a"]


def test_errors_keep_sqlalchemy_types_and_hide_parameters(engine) -> None:  # type: ignore[no-untyped-def]
    secret = f"secret-{uuid.uuid4().hex}"
    with pytest.raises(exc.DataError) as caught:
        BOOM.one(engine, {"secret": secret, "zero": 0})
    assert "division by zero" in str(caught.value)
    assert secret not in str(caught.value)  # a user's input never reaches a log line
    INSERT.one(engine, {"v": "x"})
    with pytest.raises(exc.IntegrityError):
        INSERT.one(engine, {"v": "x"})
    # The same pooled connection is fine afterwards.
    assert INSERT.one(engine, {"v": "next"}).v == "next"


def test_a_connection_killed_mid_statement_is_not_pooled_again(engine) -> None:  # type: ignore[no-untyped-def]
    # Two guards stand behind this: OneStatement invalidates the connection, and the
    # pool's checkout check refuses a closed one. Either keeps the next caller safe.
    first = BACKEND.one(engine, {}).pid
    errors: list[BaseException] = []

    def sleeper() -> None:
        try:
            SLEEP.one(engine, {"s": 30})
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            errors.append(err)

    thread = threading.Thread(target=sleeper)
    thread.start()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        deadline = time.monotonic() + 10
        while not admin.execute(
            "SELECT pg_terminate_backend(%s) FROM pg_stat_activity "
            "WHERE pid = %s AND query LIKE 'SELECT pg_sleep%%'",
            (first, first),
        ).fetchall():
            assert time.monotonic() < deadline, "the statement never started"
            time.sleep(0.05)
    thread.join(20)
    assert len(errors) == 1 and isinstance(errors[0], exc.OperationalError), errors
    assert errors[0].connection_invalidated
    second = BACKEND.one(engine, {}).pid
    assert second != first


def _probe_values(engine) -> list[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT v FROM one_statement_probe ORDER BY v")).scalars())


def test_a_transaction_commits_its_statements_together(engine) -> None:  # type: ignore[no-untyped-def]
    with transaction(engine) as tx:
        assert tx.one(INSERT, {"v": "a"}).v == "a"
        tx.execute(INSERT_QUIET, {"v": "b"})
        # Not visible outside before the block ends (one transaction, not autocommit).
        assert _probe_values(build_engine(engine.url.render_as_string(False), pool_size=1)) == []
    assert _probe_values(engine) == ["a", "b"]


def test_a_transaction_that_raises_writes_nothing(engine) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError), transaction(engine) as tx:
        tx.one(INSERT, {"v": "a"})
        raise RuntimeError("give up")
    with pytest.raises(exc.IntegrityError), transaction(engine) as tx:
        tx.one(INSERT, {"v": "twice"})
        tx.one(INSERT, {"v": "twice"})
    secret = f"secret-{uuid.uuid4().hex}"
    with pytest.raises(exc.DataError) as caught, transaction(engine) as tx:
        tx.one(INSERT, {"v": "b"})
        tx.one(BOOM, {"secret": secret, "zero": 0})
    assert secret not in str(caught.value)  # parameters hidden, as for OneStatement
    assert _probe_values(engine) == []
    # The one pooled connection is usable afterwards, in and out of transactions.
    with transaction(engine) as tx:
        tx.one(INSERT, {"v": "after"})
    assert INSERT.one(engine, {"v": "again"}).v == "again"
    assert _probe_values(engine) == ["after", "again"]
