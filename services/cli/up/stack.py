"""What `leaflab up` runs: migrations, the first admin, and the service processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from services.api.admin.service import ensure_admin
from services.cli.up.commands import celery_worker_argv, model_sim_argv, uvicorn_argv
from services.cli.up.supervisor import ProcessSpec
from services.common.db import build_engine, build_sessionmaker, transaction
from services.common.migrate import upgrade_to_head
from services.common.settings import CommonSettings

ADMIN_EMAIL = "admin@leaflab.local"


def bootstrap_database(database_url: str, home: Path) -> str | None:
    """Migrate, create the first admin once, and write its key to $LEAFLAB_HOME/admin.key."""
    upgrade_to_head(database_url)
    engine = build_engine(database_url, pool_size=1)
    try:
        with transaction(build_sessionmaker(engine)) as db:
            _, key = ensure_admin(db, email=os.environ.get("LEAFLAB_ADMIN_EMAIL", ADMIN_EMAIL))
    finally:
        engine.dispose()
    key_file = home / "admin.key"
    if key is not None:
        key_file.write_text(key + "\n")
        key_file.chmod(0o600)
    elif not key_file.exists():
        # The admin exists but its key file was removed: the key cannot be shown again.
        print(
            f"warning: {key_file} is missing; create a new key with `leaflab admin key create`",
            file=sys.stderr,
        )
    return key


def service_specs(
    *,
    host: str,
    port: int,
    workers: int,
    model_sim: str | None,
    model_sim_port: int,
    settings: CommonSettings,
) -> list[ProcessSpec]:
    specs: list[ProcessSpec] = []
    if model_sim is not None:
        script = None if model_sim in ("-", "") else str(Path(model_sim).resolve())
        specs.append(ProcessSpec("model-sim", model_sim_argv(port=model_sim_port, script=script)))
    specs.append(
        ProcessSpec("api", uvicorn_argv("services.api.app:create_app", host=host, port=port))
    )
    # The library service also consumes the `library` queue in-process: its
    # embedded vector store can be opened by one process only.
    specs.append(
        ProcessSpec(
            "library", uvicorn_argv("services.library.app:create_app", host="127.0.0.1", port=8200)
        )
    )
    for index in range(workers):
        argv = celery_worker_argv(
            "services.worker.app:app",
            "agent",
            concurrency=settings.worker_concurrency,
            name=f"agent{index + 1}@%h",
        )
        specs.append(ProcessSpec(f"worker-{index + 1}", argv))
    return specs
