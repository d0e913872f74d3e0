"""Getting the sandbox ready for `leaflab up`: image built when missing, worker spec."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import click

from services.cli.up.commands import celery_worker_argv
from services.cli.up.ports import StackPorts
from services.cli.up.stack import celery_spec
from services.cli.up.supervisor import ProcessSpec
from services.common.contracts.tasks import SANDBOX_QUEUE
from services.sandbox.operator import SandboxSettings, SandboxUnavailable, ensure_image


class _Echo(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"sandbox: {record.getMessage()}")


@contextmanager
def build_progress_shown() -> Iterator[None]:
    """The image build's progress lines (services/sandbox/image_offline.py) on the
    terminal while ``leaflab up`` waits for it, instead of minutes of silence."""
    logger = logging.getLogger("services.sandbox.image")
    handler, level = _Echo(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def sandbox_worker_spec(settings: SandboxSettings, ports: StackPorts) -> ProcessSpec | None:
    """The sandbox worker to run, or None (with a clear message) when no backend is usable.

    Never falls back to running model-written code on the host: without Docker
    or bubblewrap the python/bash tools answer with a sandbox_unavailable error.
    """
    env: dict[str, str] = {}
    if settings.sandbox_backend == "docker":
        try:
            click.echo("sandbox: checking the image (the first build takes several minutes) …")
            with build_progress_shown():
                tag = ensure_image(settings)
            click.echo(f"sandbox: docker, image {tag}")
        except SandboxUnavailable as exc:
            if shutil.which("bwrap") is None:
                click.echo(f"sandbox: unavailable ({exc}); python/bash tools will fail", err=True)
                return None
            click.echo(f"sandbox: Docker unusable ({exc}); using bubblewrap", err=True)
            env["LEAFLAB_SANDBOX_BACKEND"] = "bwrap"
    elif shutil.which("bwrap") is None:
        click.echo("sandbox: bubblewrap is not installed; python/bash tools will fail", err=True)
        return None
    argv = celery_worker_argv(
        "services.sandbox.worker:app", SANDBOX_QUEUE, concurrency=4, name="sandbox@%h"
    )
    spec = celery_spec("sandbox-worker", argv, ports)
    spec.env.update(env)
    return spec
