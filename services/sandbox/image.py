"""The sandbox image: tagged by a hash of its recipe, built when missing.

``deploy/sandbox`` holds one recipe in two forms: a Dockerfile for machines
with an image registry and ``build_offline.sh`` (debootstrap → ``docker
import``) for machines that reach only Debian and PyPI. The tag is
``leaflab-sandbox:<hash of the recipe files>``, so a changed recipe builds a
new image and an unchanged one is found in the local cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from services.common.sandbox_container import RECIPE_FILES, image_tag, recipe_dir, recipe_hash
from services.sandbox.backends.base import SandboxUnavailable
from services.sandbox.image_lock import image_build_lock
from services.sandbox.image_offline import (
    registry_unreachable,
    run_build_script,
    unreachable_notice,
)
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

# The recipe's names and hash live with the container settings (services/common),
# which the agent worker's isolated MCP servers read too; re-exported here.
__all__ = ["RECIPE_FILES", "ensure_image", "image_exists", "image_tag", "recipe_dir", "recipe_hash"]


def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(
            f"Docker is not usable ({exc}); start it (scripts/ensure_docker.sh) or set "
            "LEAFLAB_SANDBOX_BACKEND=bwrap"
        ) from exc
    return client


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


# A build step: make ``tag`` exist in Docker (the recipe's builds; tests pass a
# fast one to count builds without a debootstrap).
BuildStep = Callable[[docker.DockerClient, str, SandboxSettings, "bool | None"], None]


def ensure_image(
    settings: SandboxSettings, *, offline: bool | None = None, build: BuildStep | None = None
) -> str:
    """Return the sandbox image tag, building it first if Docker lacks it.

    Concurrent callers on one machine serialize on the machine's image-build lock
    (services/sandbox/image_lock.py): one builds, the others wait, then find the
    tag and skip. ``offline`` forces (True) or forbids (False) the debootstrap
    recipe; None follows ``LEAFLAB_SANDBOX_BUILD``.
    """
    tag = image_tag(settings)
    client = docker_client()
    if image_exists(client, tag):
        return tag
    if settings.sandbox_image:
        raise SandboxUnavailable(f"configured sandbox image {tag!r} is not present in Docker")
    with image_build_lock(settings.sandbox_image_lock, tag):
        if image_exists(client, tag):  # built by the process we waited for
            return tag
        (build or build_from_recipe)(client, tag, settings, offline)
    return tag


def build_from_recipe(
    client: docker.DockerClient, tag: str, settings: SandboxSettings, offline: bool | None
) -> None:
    """The Dockerfile, else (or when asked) the offline debootstrap recipe."""
    mode = settings.sandbox_build
    if offline is not None:
        mode = "offline" if offline else "dockerfile"
    if mode in ("auto", "dockerfile"):
        try:
            build_with_dockerfile(client, tag)
            return
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            if mode == "dockerfile":
                raise SandboxUnavailable(
                    f"building {tag} from the Dockerfile failed: {exc}"
                ) from exc
            if registry_unreachable(exc):
                log.warning("%s", unreachable_notice())
            else:
                log.warning("Dockerfile build failed (%s); building offline from Debian", exc)
    build_offline(tag, rootfs=settings.home / "sandbox-rootfs" / tag.rsplit(":", 1)[-1])


def build_with_dockerfile(client: docker.DockerClient, tag: str) -> None:
    log.info("building %s from %s/Dockerfile", tag, recipe_dir())
    client.images.build(path=str(recipe_dir()), tag=tag, rm=True, pull=False)


def build_offline(tag: str, *, rootfs: Path) -> None:
    """Run the debootstrap recipe; keeps the root filesystem for the bwrap backend."""
    run_build_script(recipe_dir() / "build_offline.sh", tag, rootfs)
