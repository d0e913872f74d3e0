"""The command lines that start Leaflab's processes, in one place.

`leaflab up`, the test fixtures and the benchmarks all start the same
services; building their argv here keeps them from drifting apart.
"""

from __future__ import annotations

import sys


def celery_worker_argv(
    app: str,
    queue: str,
    *,
    concurrency: int | None = None,
    name: str | None = None,
    loglevel: str = "INFO",
    quiet_cluster: bool = False,
) -> list[str]:
    """A Celery worker with the thread pool (every Leaflab queue is I/O-bound).

    ``quiet_cluster`` skips mingle/gossip/heartbeat chatter: single-host tests and
    benchmarks gain start-up time and lose nothing.
    """
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "-Q",
        queue,
        "--pool",
        "threads",
        "--loglevel",
        loglevel,
    ]
    # Without -c the worker's own settings decide (LEAFLAB_WORKER_CONCURRENCY).
    if concurrency is not None:
        argv += ["-c", str(concurrency)]
    if name:
        argv += ["-n", name]
    if quiet_cluster:
        argv += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    return argv


def uvicorn_argv(factory: str, *, host: str, port: int, log_level: str = "info") -> list[str]:
    """An ASGI app factory served by uvicorn.

    Open event streams never end by themselves: a stop waits for them 5 s at
    most, so SIGTERM (or the parent-death signal) ends the server in seconds.
    """
    return [
        sys.executable,
        "-m",
        "uvicorn",
        factory,
        "--factory",
        "--host",
        host,
        "--port",
        str(port),
        "--log-level",
        log_level,
        "--timeout-graceful-shutdown",
        "5",
    ]


def model_sim_argv(*, port: int, script: str | None = None, host: str = "127.0.0.1") -> list[str]:
    """The model simulator's own command (``python -m services.model_sim``)."""
    argv = [sys.executable, "-m", "services.model_sim", "--host", host, "--port", str(port)]
    if script:
        argv += ["--script", script]
    return argv
