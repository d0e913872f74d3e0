"""One self-committing statement on a plain connection: the sandbox's hot path.

The warm exec's statements (its claim, its finish, the after-check's read) each
stand alone. Run through an ORM session (``services.common.db.autocommit``) each
pays for the session and the ORM's statement handling around it; on a plain
connection in autocommit mode it costs about 0.3 ms less (measured on the claim,
the finish and the read, bench/RESULTS.md, Sandbox 2026-12-07). Commit semantics are
the same: each statement is its own transaction, committed when it returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker


@contextmanager
def autocommit_connection(factory: sessionmaker[Session]) -> Iterator[Connection]:
    """A pooled connection of ``factory``'s engine whose statements commit themselves."""
    engine: Engine = factory.kw["bind"]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield conn
