"""Every Leaflab service role and the one command line that starts it.

`leaflab serve ROLE`, docker compose, the Kubernetes manifests and the
multi-host test all start services through these roles, so a flag changed
here changes every deployment shape at once (`tests/deploy/` checks that
compose and the manifests say `leaflab serve <role>` and nothing else).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.cli.up.commands import celery_worker_argv, model_sim_argv, uvicorn_argv
from services.common.contracts.tasks import AGENT_QUEUE, LIBRARY_QUEUE, SANDBOX_QUEUE


@dataclass(frozen=True)
class RoleOptions:
    host: str = "0.0.0.0"  # noqa: S104 - a service in a container listens on all interfaces
    port: int | None = None
    concurrency: int | None = None
    loglevel: str = "INFO"


@dataclass(frozen=True)
class Role:
    name: str
    summary: str
    default_port: int | None
    argv: Callable[[RoleOptions], list[str]]


def _port(opts: RoleOptions, default: int) -> int:
    return opts.port if opts.port is not None else default


ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role(
            "api",
            "the HTTP API (and web pages); scale horizontally behind a load balancer",
            8000,
            lambda o: uvicorn_argv(
                "services.api.app:create_app",
                host=o.host,
                port=_port(o, 8000),
                log_level=o.loglevel.lower(),
            ),
        ),
        Role(
            "worker",
            "an agent worker (queue `agent`); also runs the job sweeper",
            None,
            lambda o: celery_worker_argv(
                "services.worker.app:app",
                AGENT_QUEUE,
                concurrency=o.concurrency,
                loglevel=o.loglevel,
            ),
        ),
        Role(
            "sandbox",
            "a sandbox worker (queue `sandbox`); needs a container runtime on its host",
            None,
            lambda o: celery_worker_argv(
                "services.sandbox.worker:app",
                SANDBOX_QUEUE,
                concurrency=o.concurrency or 4,
                loglevel=o.loglevel,
            ),
        ),
        Role(
            "library",
            "the library search service (HTTP)",
            8200,
            lambda o: uvicorn_argv(
                "services.library.app:create_app",
                host=o.host,
                port=_port(o, 8200),
                log_level=o.loglevel.lower(),
            ),
        ),
        Role(
            "library-worker",
            "a library ingestion worker (queue `library`); also runs its sweeper",
            None,
            lambda o: celery_worker_argv(
                "services.library.worker:app",
                LIBRARY_QUEUE,
                concurrency=o.concurrency or 2,
                loglevel=o.loglevel,
            ),
        ),
        Role(
            "model-sim",
            "the model simulator (an OpenAI-compatible server for tests and demos)",
            8100,
            lambda o: model_sim_argv(port=_port(o, 8100), host=o.host),
        ),
    )
}


def role_argv(name: str, opts: RoleOptions) -> list[str]:
    """The command line of one role; KeyError names an unknown role."""
    return ROLES[name].argv(opts)
