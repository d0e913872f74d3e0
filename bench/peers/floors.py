"""The two floors: the same job with one autocommitted INSERT per step, and with none.

Floor 1 is the least a durable step can cost: its result in one row, committed
before the next step starts. Floor 2 is the workload alone (model HTTP calls and
tool calls on threads): what any runtime adds is measured above it.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from bench.peers.child import Batch, ChildArgs, run_threads, serve
from bench.peers.workload import STEPS, model_call, model_client, tool_call


class _Pool:
    """At most ``size`` autocommit connections, opened on first use (no extra needed)."""

    def __init__(self, dsn: str, size: int) -> None:
        self._dsn = dsn
        self._idle: queue.LifoQueue[psycopg.Connection] = queue.LifoQueue()
        self._slots = queue.Queue[None]()
        for _ in range(size):
            self._slots.put(None)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        self._slots.get()
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = psycopg.connect(self._dsn, autocommit=True)
        try:
            yield conn
        finally:
            self._idle.put(conn)
            self._slots.put(None)


def prepare(args: ChildArgs) -> Batch:
    """Floor 1 with ``options["durable"] == "1"``, else floor 2."""
    if args.options.get("durable") != "1":
        return _prepare_bare(args)
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE steps (job int NOT NULL, n int NOT NULL, kind text NOT NULL,"
            " output text NOT NULL, PRIMARY KEY (job, n))"
        )
    pool = _Pool(args.dsn, args.pool)
    client = model_client(args.sim_url)

    def job(number: int) -> None:
        for n, kind in enumerate(STEPS):
            output = model_call(client) if kind == "model" else tool_call(number, n)
            with pool.connection() as conn:
                conn.execute(
                    "INSERT INTO steps (job, n, kind, output) VALUES (%s, %s, %s, %s)",
                    (number, n, kind, output),
                )

    return lambda: run_threads(args, job)


def _prepare_bare(args: ChildArgs) -> Batch:
    client = model_client(args.sim_url)

    def job(number: int) -> None:
        for n, kind in enumerate(STEPS):
            model_call(client) if kind == "model" else tool_call(number, n)

    return lambda: run_threads(args, job)


if __name__ == "__main__":
    serve(prepare)
