"""What operators' tools (`leaflab sandbox`, `leaflab up`) may use of the sandbox service.

Building and checking the sandbox image, and learning whether a backend is
usable on this host, are an operator's jobs done before any worker runs — not
requests a running service answers — so the CLI calls them here, through this
one module, and never reaches into the sandbox's internals.
"""

from __future__ import annotations

from services.sandbox.backends.base import SandboxUnavailable
from services.sandbox.image import docker_client, ensure_image, image_exists, image_tag, recipe_dir
from services.sandbox.settings import SandboxSettings, get_sandbox_settings

__all__ = [
    "SandboxSettings",
    "SandboxUnavailable",
    "docker_client",
    "ensure_image",
    "get_sandbox_settings",
    "image_exists",
    "image_tag",
    "recipe_dir",
]
