"""`leaflab up`: the whole stack on this machine, supervised, stopped cleanly by Ctrl-C."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import FrameType

import click
import httpx

from services.cli.up.embedded import (
    EmbeddedPostgres,
    redis_server_argv,
    wait_for_redis,
)
from services.cli.up.sandbox_setup import sandbox_worker_spec
from services.cli.up.stack import bootstrap_database, service_specs
from services.cli.up.supervisor import ProcessSpec, Supervisor
from services.common.settings import CommonSettings
from services.sandbox.settings import SandboxSettings


@click.command()
@click.option("--port", default=8000, show_default=True, help="API port")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option(
    "--model-sim",
    "model_sim",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[SCRIPT]",
    help="serve the model simulator as the model (optionally playing SCRIPT)",
)
@click.option("--model-sim-port", default=8100, show_default=True)
@click.option("--workers", default=1, show_default=True, help="agent worker processes")
def up(port: int, host: str, model_sim: str | None, model_sim_port: int, workers: int) -> None:
    """Start Leaflab here: database, Redis, API, workers (embedded services when no URLs)."""
    settings = CommonSettings()
    home = Path(settings.home).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    supervisor = Supervisor(home / "logs", base_env={"LEAFLAB_HOME": str(home)})
    postgres: EmbeddedPostgres | None = None
    stop = _install_signal_handlers()
    try:
        database_url = settings.database_url
        if not database_url:
            postgres = EmbeddedPostgres(home)
            database_url = postgres.start()
            click.echo(f"embedded PostgreSQL: {postgres.datadir}")
        redis_url = settings.redis_url
        if not redis_url:
            argv, redis_url = redis_server_argv(home)
            supervisor.add(ProcessSpec("redis", argv))
            wait_for_redis(redis_url)
            click.echo(f"embedded Redis: {redis_url}")
        key = bootstrap_database(database_url, home)
        env = {"LEAFLAB_DATABASE_URL": database_url, "LEAFLAB_REDIS_URL": redis_url}
        if model_sim is not None:
            env["LEAFLAB_LLM_BASE_URL"] = f"http://127.0.0.1:{model_sim_port}/v1"
        supervisor.base_env.update(env)
        os.environ.update(env)  # the sandbox image check reads the same settings
        sandbox = sandbox_worker_spec(SandboxSettings())
        if sandbox is not None:
            supervisor.add(sandbox)
        for spec in service_specs(
            host=host,
            port=port,
            workers=workers,
            model_sim=model_sim,
            model_sim_port=model_sim_port,
            settings=settings,
        ):
            supervisor.add(spec)
        url = f"http://{host}:{port}"
        _wait_healthy(url, supervisor, stop)
        click.echo(f"Leaflab is up: {url}  (API docs: {url}/docs)")
        click.echo(f"admin key: {home / 'admin.key'}" + (" (new)" if key else ""))
        click.echo(f"logs: {home / 'logs'}   Ctrl-C stops everything")
        while not stop["flag"]:
            for name in supervisor.poll():
                click.echo(f"restarted {name}", err=True)
            time.sleep(0.5)
    finally:
        click.echo("stopping …")
        supervisor.stop()
        if postgres is not None:
            postgres.stop()
        click.echo("stopped")


def _install_signal_handlers() -> dict[str, bool]:
    stop = {"flag": False}

    def _handler(signum: int, frame: FrameType | None) -> None:
        stop["flag"] = True

    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)
    return stop


def _wait_healthy(url: str, supervisor: Supervisor, stop: dict[str, bool]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not stop["flag"]:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        supervisor.poll()
        time.sleep(0.3)
    if not stop["flag"]:
        raise click.ClickException(
            f"the API did not become healthy; see {supervisor.logs_dir / 'api.log'}"
        )
