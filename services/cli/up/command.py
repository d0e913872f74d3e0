"""`leaflab up`: the whole stack on this machine, supervised, stopped cleanly by any signal."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import click

from services.cli.up.embedded import (
    EmbeddedStoreError,
    postgres_spec,
    redis_spec,
    wait_for_postgres,
    wait_for_redis,
)
from services.cli.up.local_model import LocalModel
from services.cli.up.local_model import local_model as local_model_config
from services.cli.up.model_endpoint import ModelChoice, choose_model, print_model_block
from services.cli.up.ports import PortInUse, StackPorts, choose_ports
from services.cli.up.readiness import (
    Check,
    NotReady,
    celery_workers_answer,
    http_ok,
    wait_ready,
    worker_node,
)
from services.cli.up.sandbox_setup import sandbox_worker_spec
from services.cli.up.scrape_targets import write_scrape_config
from services.cli.up.stack import bootstrap_database, service_specs
from services.cli.up.stackfile import (
    HomeInUse,
    StackHome,
    StackRecord,
    internal_token,
    metrics_token,
)
from services.cli.up.supervisor import Supervisor
from services.common.celery_app import build_celery
from services.common.settings import CommonSettings
from services.sandbox.operator import SandboxSettings

READY_TIMEOUT_S = 300.0


@dataclass
class ModelRun:
    """The model of this stack and what `up` runs for it (the simulator's script, or the
    local model's server)."""

    choice: ModelChoice
    model_sim: str | None
    local: LocalModel | None

    def env(self, ports: StackPorts) -> dict[str, str]:
        if ports.model_sim is not None:
            self.choice.at(ports.model_sim)
        if ports.local_model is not None and self.local is not None:
            self.choice.at(ports.local_model)
        env = self.choice.env()
        if self.local is not None and not os.environ.get("LEAFLAB_CONTEXT_LIMIT_TOKENS"):
            env["LEAFLAB_CONTEXT_LIMIT_TOKENS"] = str(self.local.n_ctx)  # the server's window
        return env


class StopRequested(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived: stop the stack."""


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
    help="serve the model simulator as the model, playing SCRIPT (without one: auto mode, "
    "plausible replies for any request)",
)
@click.option("--model-sim-port", default=None, type=int, help="[default: a free port]")
@click.option(
    "--local-model",
    is_flag=True,
    help="serve a small real model here (llama.cpp, Gemma 3 270M on CPU; install it once "
    "with scripts/ensure_real_model.sh)",
)
@click.option(
    "--model-url",
    default=None,
    metavar="URL",
    help="an OpenAI-compatible endpoint, e.g. http://gpu-box:8000/v1 (as LEAFLAB_LLM_BASE_URL)",
)
@click.option(
    "--model", default=None, metavar="NAME", help="the model it serves (as LEAFLAB_MODEL)"
)
@click.option("--workers", default=1, show_default=True, help="agent worker processes")
def up(
    port: int,
    host: str,
    model_sim: str | None,
    model_sim_port: int | None,
    local_model: bool,
    model_url: str | None,
    model: str | None,
    workers: int,
) -> None:
    """Start Leaflab here: database, Redis, API, workers (embedded services when no URLs).

    The model: --model-url/--model (or LEAFLAB_LLM_BASE_URL/LEAFLAB_MODEL), --local-model,
    else the model simulator (simulated answers, labelled as such)."""
    settings = CommonSettings()
    local = local_model_config()
    choice = choose_model(
        model_sim=model_sim,
        local_model=local_model,
        model_url=model_url,
        model=model,
        local_alias=local.alias,
    )
    if choice.kind == "local" and local.missing():
        raise click.ClickException(
            "the local model is not installed: " + "; ".join(local.missing())
        )
    if choice.simulated and model_sim is None:
        model_sim = "-"  # no model configured: the simulator in auto mode
    home = Path(settings.home).expanduser().resolve()
    stack_home = StackHome(home)
    try:
        stack_home.claim()
        ports = choose_ports(
            host=host,
            api_port=port,
            model_sim_port=model_sim_port,
            with_model_sim=choice.simulated,
            with_local_model=choice.kind == "local",
        )
    except (HomeInUse, PortInUse) as exc:
        stack_home.release()
        raise click.ClickException(str(exc)) from None
    _install_signal_handlers()
    supervisor = Supervisor(home / "logs", base_env={"LEAFLAB_HOME": str(home)})
    model_run = ModelRun(choice, model_sim, local if choice.kind == "local" else None)
    try:
        _run(supervisor, stack_home, ports, host=host, model=model_run, workers=workers)
    except StopRequested:
        pass
    except (EmbeddedStoreError, NotReady) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    finally:
        _ignore_signals()  # a second Ctrl-C must not cut the clean stop short
        _say("stopping …")
        supervisor.stop()
        stack_home.release()
        _say("stopped")


def _say(message: str) -> None:
    """Print while stopping: a closed terminal (EIO) or pipe must not cut the stop short."""
    try:
        click.echo(message)
    except OSError:
        pass


def _run(
    supervisor: Supervisor,
    stack_home: StackHome,
    ports: StackPorts,
    *,
    host: str,
    model: ModelRun,
    workers: int,
) -> None:
    settings = CommonSettings()
    home = stack_home.home
    url = f"http://{host}:{ports.api}"
    # Written before anything starts, so a second `up` meanwhile can name this one.
    record = StackRecord(
        pid=os.getpid(), pgid=os.getpgrp(), home=str(home), api_url=url, ports=ports.as_dict()
    )
    stack_home.write(record)
    env = _stores(supervisor, home, settings)
    key = bootstrap_database(env["LEAFLAB_DATABASE_URL"], home)
    env["LEAFLAB_LIBRARY_URL"] = f"http://127.0.0.1:{ports.library}"
    if not os.environ.get("LEAFLAB_INTERNAL_TOKEN"):
        env["LEAFLAB_INTERNAL_TOKEN"] = internal_token(home)
    if not os.environ.get("LEAFLAB_METRICS_TOKEN"):
        # The API's /metrics is never open: the stack's Prometheus config carries this.
        env["LEAFLAB_METRICS_TOKEN"] = metrics_token(home)
    env.update(model.env(ports))
    supervisor.base_env.update(env)
    os.environ.update(env)  # the sandbox image check and the readiness ping read them too
    specs = service_specs(
        host=host,
        ports=ports,
        workers=workers,
        model_sim=model.model_sim,
        settings=settings,
        local_model=model.local,
        internal_token=os.environ["LEAFLAB_INTERNAL_TOKEN"],
    )
    sandbox = sandbox_worker_spec(SandboxSettings(), ports)
    if sandbox is not None:
        specs.append(sandbox)
    for spec in specs:
        supervisor.add(spec)
    record.ports = ports.as_dict()  # now with the workers' metrics ports
    record.children = supervisor.pids()
    stack_home.write(record)
    targets_dir = write_scrape_config(
        home, host, ports, metrics_token=os.environ.get("LEAFLAB_METRICS_TOKEN")
    )

    def supervise() -> bool:
        supervisor.poll()  # a service crashing while it loads is restarted meanwhile
        return True

    wait_ready(_checks(supervisor, ports, url, env), timeout_s=READY_TIMEOUT_S, tick=supervise)
    log = str(home / "logs" / "local-model.log") if model.local is not None else None
    print_model_block(model.choice, log=log)
    click.echo(f"Leaflab is ready: {url}  (API docs: {url}/docs)")
    click.echo(f"admin key: {home / 'admin.key'}" + (" (new)" if key else ""))
    click.echo(f"logs: {home / 'logs'}   stack: {home / 'stack.json'}")
    click.echo(f"Prometheus targets: {targets_dir / 'targets.json'}   Ctrl-C stops everything")
    while True:
        restarted = supervisor.poll()
        for name in restarted:
            click.echo(f"restarted {name}", err=True)
        if restarted:
            record.children = supervisor.pids()
            stack_home.write(record)
        time.sleep(0.5)


def _stores(supervisor: Supervisor, home: Path, settings: CommonSettings) -> dict[str, str]:
    """The database and Redis URLs: configured ones, or embedded servers started now."""
    database_url = settings.database_url
    if not database_url:
        spec, database_url = postgres_spec(home)
        supervisor.add(spec)
        wait_for_postgres(database_url)
        click.echo(f"embedded PostgreSQL: {home / 'pg'}")
    redis_url = settings.redis_url
    if not redis_url:
        spec, redis_url = redis_spec(home)
        supervisor.add(spec)
        wait_for_redis(redis_url)
        click.echo(f"embedded Redis: {redis_url}")
    return {"LEAFLAB_DATABASE_URL": database_url, "LEAFLAB_REDIS_URL": redis_url}


def _checks(
    supervisor: Supervisor, ports: StackPorts, url: str, env: dict[str, str]
) -> list[Check]:
    logs = supervisor.logs_dir
    checks = [
        Check("api", http_ok(f"{url}/healthz"), str(logs / "api.log")),
        Check(
            "library",
            http_ok(f"http://127.0.0.1:{ports.library}/healthz"),
            str(logs / "library.log"),
        ),
    ]
    if ports.model_sim is not None:
        sim = f"http://127.0.0.1:{ports.model_sim}/healthz"
        checks.append(Check("model-sim", http_ok(sim), str(logs / "model-sim.log")))
    if ports.local_model is not None:
        served = f"http://127.0.0.1:{ports.local_model}/v1/models"
        checks.append(Check("local-model", http_ok(served), str(logs / "local-model.log")))
    celery = build_celery(CommonSettings(redis_url=env["LEAFLAB_REDIS_URL"]))
    for child in supervisor.children:
        name = child.spec.name
        if name.startswith("worker-") or name == "sandbox-worker":
            node = worker_node(_node_name(child.spec.argv))
            checks.append(
                Check(name, celery_workers_answer(celery, [node]), str(logs / f"{name}.log"))
            )
    return checks


def _node_name(argv: list[str]) -> str:
    return argv[argv.index("-n") + 1].split("@", 1)[0]


def _install_signal_handlers() -> None:
    def _handler(signum: int, frame: FrameType | None) -> None:
        raise StopRequested(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _handler)


def _ignore_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
