"""A Postgres backend whose client host was cut off ends within about a minute, with its locks.

Postgres notices a vanished client only through TCP. Leaflab's connections ask the
server for keepalives and a TCP user timeout (``services.common.db.CONNECT_ARGS``),
which end a backend idle in transaction; a backend waiting on a lock does not read
its socket at all, and lived (holding every lock its transaction had) as long as the
blocker did, until ``client_connection_check_interval`` made it look. Each client
here is a process on another "host" (a network namespace) using Leaflab's engine;
the test pulls the link and watches both backends go while it still holds the lock
one of them waits for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from tests.faults.netns import HOST_ADDR, NS_ADDR, NetnsUnavailable, WorkerHost, worker_host
from tests.faults.private_servers import MissingBinary, PrivatePostgres
from tests.fixtures.processes import free_port

# Well past the ~40 s TCP takes to declare the client dead (30 s user timeout, then
# the next keepalive or connection check); far below the blocker's hold.
GONE_WITHIN_S = 90

# Runs on the cut-off host: lock a row, then either sit idle in the transaction or
# wait on a row the test holds.
CLIENT = """
import sys, time
from sqlalchemy import text
from services.common.db import build_engine
url, mine, wanted = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = build_engine(url).connect()
conn.execute(text("UPDATE t SET v = v + 1 WHERE id = :id"), {"id": mine})
print("locked", flush=True)
if wanted:
    conn.execute(text("UPDATE t SET v = v + 1 WHERE id = :id"), {"id": wanted})
time.sleep(3600)
"""


@dataclass
class Lab:
    host: WorkerHost
    pg: PrivatePostgres

    def dsn(self) -> str:
        return self.pg.url().replace("+psycopg", "")


@pytest.fixture
def lab() -> Iterator[Lab]:
    try:
        with worker_host() as host:
            pg = PrivatePostgres(free_port(), hosts=(HOST_ADDR,))
            try:
                pg.init()
                yield Lab(host, pg)
            finally:
                pg.destroy()
    except (NetnsUnavailable, MissingBinary, PermissionError) as exc:
        pytest.fail(f"this fault test needs root, network namespaces and PostgreSQL: {exc}")


def _client(lab: Lab, mine: int, wanted: int) -> subprocess.Popen[str]:
    argv = [*lab.host.exec_prefix(), sys.executable, "-c", CLIENT]
    proc = subprocess.Popen(  # noqa: S603 - our interpreter, our script
        [*argv, lab.pg.url(), str(mine), str(wanted)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _backends(admin: psycopg.Connection) -> list[tuple[str, str | None]]:
    rows = admin.execute(
        "SELECT state, wait_event_type FROM pg_stat_activity WHERE client_addr = %s",
        (NS_ADDR,),
    ).fetchall()
    return [(str(r[0]), r[1]) for r in rows]


def _locked(admin: psycopg.Connection, ids: list[int]) -> int:
    free = admin.execute(
        "SELECT count(*) FROM (SELECT 1 FROM t WHERE id = ANY(%s) FOR UPDATE SKIP LOCKED) f",
        (ids,),
    ).fetchone()
    return len(ids) - int(free[0] if free else 0)


@pytest.mark.slow
def test_cut_off_clients_backends_end_and_free_their_rows(lab: Lab) -> None:
    with psycopg.connect(lab.dsn(), autocommit=True) as admin:
        admin.execute("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
        admin.execute("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
        blocker = psycopg.connect(lab.dsn())  # holds row 2 for the whole test
        clients: list[subprocess.Popen[str]] = []
        try:
            blocker.execute("UPDATE t SET v = v + 1 WHERE id = 2")
            clients.append(_client(lab, mine=1, wanted=0))  # idle in transaction
            clients.append(_client(lab, mine=3, wanted=2))  # waiting on the blocker
            deadline = time.monotonic() + 20
            while ("active", "Lock") not in _backends(admin):
                assert time.monotonic() < deadline, _backends(admin)
                time.sleep(0.1)
            assert _locked(admin, [1, 3]) == 2
            lab.host.cut()
            cut = time.monotonic()
            while _backends(admin):
                waited = time.monotonic() - cut
                assert waited < GONE_WITHIN_S, (
                    f"backends of the cut-off host still there after {waited:.0f} s: "
                    f"{_backends(admin)}"
                )
                time.sleep(1)
            print(f"cut-off backends gone after {time.monotonic() - cut:.0f} s")
            assert _locked(admin, [1, 3]) == 0
        finally:
            blocker.close()
            for proc in clients:
                proc.kill()
                proc.wait(10)
