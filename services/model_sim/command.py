"""The simulator's command line: ``python -m services.model_sim`` and ``leaflab model-sim``.

The simulator owns its arguments; the ``leaflab`` CLI only registers this
command under its own name, so the two never drift apart.
"""

from __future__ import annotations

from pathlib import Path

import click

from services.model_sim.app import DEFAULT_MODEL
from services.model_sim.quirks import DEFAULT_N_CTX, QUIRK_NAMES, QuirkName
from services.model_sim.script import ScriptError
from services.model_sim.server import build_config, serve


@click.command("model-sim")
@click.option("--port", default=8100, show_default=True, type=int, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--script",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="LEAFLAB_SIM_SCRIPT",
    default=None,
    help="Default script (JSON) played to every conversation; without one, conversations "
    "with no script of their own get auto-mode replies [env LEAFLAB_SIM_SCRIPT].",
)
@click.option(
    "--latency-ms",
    default=0,
    show_default=True,
    type=click.IntRange(0, 600_000),
    help="Latency of every reply unless the script sets its own.",
)
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Model name served.")
@click.option(
    "--quirks",
    type=click.Choice(QUIRK_NAMES),
    default="none",
    show_default=True,
    envvar="LEAFLAB_SIM_QUIRKS",
    help="Answer like another server: its refusals, routes and error forms "
    "[env LEAFLAB_SIM_QUIRKS].",
)
@click.option(
    "--n-ctx",
    default=DEFAULT_N_CTX,
    show_default=True,
    type=click.IntRange(16, 10_000_000),
    help="Context window of the quirky server (prompts this long are refused).",
)
@click.option(
    "--control-token",
    envvar="LEAFLAB_SIM_CONTROL_TOKEN",
    default=None,
    help="Require X-Leaflab-Internal: TOKEN on the control API (/_sim/*); `leaflab up` "
    "sets the stack's internal token [env LEAFLAB_SIM_CONTROL_TOKEN].",
)
def model_sim(
    port: int,
    host: str,
    script: Path | None,
    latency_ms: int,
    model: str,
    quirks: QuirkName,
    n_ctx: int,
    control_token: str | None,
) -> None:
    """Serve scripted or auto-mode replies at http://HOST:PORT/v1 (chat completions,
    streaming, faults)."""
    try:
        config = build_config(
            script,
            latency_ms=latency_ms,
            model=model,
            quirks=quirks,
            n_ctx=n_ctx,
            control_token=control_token,
        )
    except ScriptError as exc:
        raise click.ClickException(str(exc)) from exc
    mode = f"script {script}" if script else "auto mode"
    if quirks != "none":
        mode += f", quirks {quirks}, n_ctx {n_ctx}"
    if control_token:
        mode += ", control API behind the internal token"
    click.echo(f"model simulator on http://{host}:{port}/v1 (model {model}, {mode})", err=True)
    serve(config, host=host, port=port)
