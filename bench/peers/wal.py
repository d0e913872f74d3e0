"""WAL bytes one database wrote over a span, on a cluster that others write to too.

``pg_current_wal_lsn`` before and after counts every database's WAL: on the shared
local Postgres another session's ``CREATE DATABASE`` alone writes megabytes. So the
span's records are read back with ``pg_walinspect`` (contrib, PostgreSQL 15+) and
only ours are summed: those whose block references name our database's OID, plus
every record of a transaction that wrote one (its commit record has no block
reference). The extension is created in the scratch database itself, which is
dropped after the run. Where it is unavailable, only the cluster's figure is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

# A block reference reads "blkref #0: rel <tablespace>/<database>/<relfilenode> ...".
_OURS = """
WITH recs AS (
    SELECT xid::text AS xid, record_length, coalesce(block_ref, '') AS ref
    FROM pg_get_wal_records_info(%(start)s::pg_lsn, %(stop)s::pg_lsn)
), ours AS (
    SELECT DISTINCT xid FROM recs WHERE ref LIKE %(pattern)s AND xid <> '0'
)
SELECT coalesce(sum(record_length), 0) FROM recs
WHERE ref LIKE %(pattern)s OR xid IN (SELECT xid FROM ours)
"""


@dataclass(frozen=True)
class WalSpan:
    ours: int | None  # bytes of records attributed to the database; None: no pg_walinspect
    cluster: int  # bytes the whole cluster wrote over the span


class WalMeter:
    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._start = ""
        self._inspect = False
        self._oid = 0

    def start(self) -> None:
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
                self._inspect = True
            except psycopg.Error:
                self._inspect = False
            row = conn.execute(
                "SELECT oid FROM pg_database WHERE datname = current_database()"
            ).fetchone()
            self._oid = int(row[0]) if row else 0
            self._start = _lsn(conn)

    def stop(self) -> WalSpan:
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            stop = _lsn(conn)
            row = conn.execute(
                "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", (stop, self._start)
            ).fetchone()
            cluster = int(row[0]) if row else 0
            if not self._inspect:
                return WalSpan(None, cluster)
            params = {"start": self._start, "stop": stop, "pattern": f"% rel %/{self._oid}/%"}
            row = conn.execute(_OURS, params).fetchone()
        return WalSpan(int(row[0]) if row else 0, cluster)


def _lsn(conn: psycopg.Connection) -> str:
    row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])
