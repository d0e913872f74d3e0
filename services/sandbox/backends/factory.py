"""Pick the sandbox backend named by ``LEAFLAB_SANDBOX_BACKEND``."""

from __future__ import annotations

import shutil

from services.sandbox.backends.base import SandboxBackend, SandboxUnavailable
from services.sandbox.settings import SandboxSettings


def build_backend(settings: SandboxSettings, *, owner: str) -> SandboxBackend:
    """The configured backend; raises :class:`SandboxUnavailable` if it is unusable."""
    if settings.sandbox_backend == "docker":
        # Imported here: the Docker SDK is only needed where Docker is the backend.
        from services.sandbox.backends.docker.backend import DockerBackend

        return DockerBackend(settings, owner=owner)
    if settings.sandbox_backend == "bwrap":
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable(
                "LEAFLAB_SANDBOX_BACKEND=bwrap but bubblewrap is not installed "
                "(apt-get install -y bubblewrap, or scripts/ensure_docker.sh)"
            )
        from services.sandbox.backends.bwrap.backend import BwrapBackend

        return BwrapBackend(settings)
    raise SandboxUnavailable(f"unknown sandbox backend {settings.sandbox_backend!r}")
