"""What `leaflab up` runs: migrations, the first admin, and the service processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from services.api.operator import bootstrap_first_admin
from services.cli.up.commands import celery_worker_argv, model_sim_argv, uvicorn_argv
from services.cli.up.local_model import LocalModel
from services.cli.up.ports import StackPorts, free_port
from services.cli.up.stackfile import write_private
from services.cli.up.supervisor import WORKER_STOP_S, ProcessSpec, Tier
from services.common.contracts.tasks import AGENT_QUEUE
from services.common.migrate import upgrade_to_head
from services.common.settings import CommonSettings

ADMIN_EMAIL = "admin@leaflab.local"


def bootstrap_database(database_url: str, home: Path) -> str | None:
    """Migrate, create the first admin once, and write its key to $LEAFLAB_HOME/admin.key."""
    upgrade_to_head(database_url)
    email = os.environ.get("LEAFLAB_ADMIN_EMAIL", ADMIN_EMAIL)
    key = bootstrap_first_admin(database_url, email=email)
    key_file = home / "admin.key"
    if key is not None:
        write_private(key_file, key + "\n")
    elif not key_file.exists():
        # The admin exists but its key file was removed: the key cannot be shown again.
        print(
            f"warning: {key_file} is missing; create a new key with `leaflab admin key create`",
            file=sys.stderr,
        )
    else:
        key_file.chmod(0o600)  # files from earlier versions may be wider
    return key


def celery_spec(name: str, argv: list[str], ports: StackPorts) -> ProcessSpec:
    """A Celery worker with its own metrics port (recorded in ``ports``), on loopback
    only: the stack's Prometheus targets are there, and no other host (nor a sandbox)
    has any business with a worker's metrics."""
    port = free_port()
    ports.metrics[name] = port
    env = {"LEAFLAB_METRICS_PORT": str(port), "LEAFLAB_METRICS_BIND": "127.0.0.1"}
    return ProcessSpec(name, argv, env=env, tier=Tier.WORKER, stop_timeout_s=WORKER_STOP_S)


def service_specs(
    *,
    host: str,
    ports: StackPorts,
    workers: int,
    model_sim: str | None,
    settings: CommonSettings,
    local_model: LocalModel | None = None,
    internal_token: str | None = None,
) -> list[ProcessSpec]:
    specs: list[ProcessSpec] = []
    if model_sim is not None and ports.model_sim is not None:
        script = None if model_sim in ("-", "") else str(Path(model_sim).resolve())
        # The simulator's control API is for whoever holds the stack's internal token,
        # not for every local account (see services/model_sim/control_guard.py).
        sim_env = {"LEAFLAB_SIM_CONTROL_TOKEN": internal_token} if internal_token else {}
        argv = model_sim_argv(port=ports.model_sim, script=script)
        specs.append(ProcessSpec("model-sim", argv, env=sim_env, tier=Tier.MODEL))
    if local_model is not None and ports.local_model is not None:
        argv = local_model.argv(port=ports.local_model)
        specs.append(ProcessSpec("local-model", argv, env=local_model.env(), tier=Tier.MODEL))
    specs.append(
        ProcessSpec(
            "api",
            uvicorn_argv("services.api.app:create_app", host=host, port=ports.api),
            tier=Tier.API,
        )
    )
    # The library service also consumes the `library` queue in-process: its
    # embedded vector store can be opened by one process only.
    library_argv = uvicorn_argv(
        "services.library.app:create_app", host="127.0.0.1", port=ports.library
    )
    specs.append(
        ProcessSpec(
            "library",
            library_argv,
            env={"LEAFLAB_LIBRARY_PORT": str(ports.library)},
            tier=Tier.LIBRARY,
        )
    )
    for index in range(workers):
        name = f"worker-{index + 1}"
        argv = celery_worker_argv(
            "services.worker.app:app",
            AGENT_QUEUE,
            name=f"agent{index + 1}@%h",
        )
        specs.append(celery_spec(name, argv, ports))
    return specs
