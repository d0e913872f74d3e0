"""``leaflab sandbox …``: manage the sandbox image."""

from __future__ import annotations

import sys

import click

from services.sandbox.operator import (
    SandboxUnavailable,
    docker_client,
    get_sandbox_settings,
    image_exists,
    image_tag,
    recipe_dir,
)


@click.group("sandbox")
def sandbox() -> None:
    """The sandbox that runs the agent's python and bash tools."""


@sandbox.command("build-image")
@click.option(
    "--offline",
    is_flag=True,
    help="Build from Debian packages (debootstrap + docker import), for machines "
    "that reach no image registry.",
)
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def build_image(offline: bool, force: bool) -> None:
    """Build the sandbox image from deploy/sandbox (tagged by the recipe's hash)."""
    from services.sandbox.operator import ensure_image

    settings = get_sandbox_settings()
    tag = image_tag(settings)
    try:
        client = docker_client()
        if force and image_exists(client, tag):
            client.images.remove(tag, force=True)
        click.echo(
            f"building {tag} from {recipe_dir()} "
            f"({'offline, Debian packages' if offline else settings.sandbox_build})…",
            err=True,
        )
        built = ensure_image(settings, offline=True if offline else None)
    except SandboxUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(built)
