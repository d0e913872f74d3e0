"""LEAFLAB_SANDBOX_DOCKER_RUNTIME picks the OCI runtime of every sandbox container.

gVisor (`runsc`) is the recommended runtime on cluster sandbox nodes; it is not
installed here, so the test names Docker's own `runc` explicitly and checks the
container the daemon created, and that an unknown runtime is refused, not ignored.
"""

from __future__ import annotations

from pathlib import Path

import docker
import docker.errors
import pytest

from services.sandbox.backends.docker.containers import ContainerFactory
from services.sandbox.owners import new_owner
from services.sandbox.settings import SandboxSettings


def _factory(
    client: docker.DockerClient, settings: SandboxSettings, image: str, runtime: str
) -> ContainerFactory:
    chosen = settings.model_copy(
        update={"sandbox_docker_runtime": runtime, "sandbox_runner": False}
    )
    # A live owner (this process): a sandbox worker's janitor running meanwhile reaps
    # containers whose owner it cannot find alive, such as a made-up name.
    return ContainerFactory(client, chosen, image, owner=new_owner())


def test_containers_run_under_the_configured_runtime(
    docker_ready: docker.DockerClient,
    sandbox_settings: SandboxSettings,
    sandbox_image: str,
    tmp_path: Path,
) -> None:
    factory = _factory(docker_ready, sandbox_settings, sandbox_image, "runc")
    slot = factory.create(tmp_path, network=False, slot=False)
    try:
        slot.container.reload()
        assert slot.container.attrs["HostConfig"]["Runtime"] == "runc"
    finally:
        # The factory's own removal: a janitor may already be removing the container
        # ("removal already in progress" is not a failure of this test).
        factory.remove(slot)


def test_an_unknown_runtime_is_refused(
    docker_ready: docker.DockerClient,
    sandbox_settings: SandboxSettings,
    sandbox_image: str,
    tmp_path: Path,
) -> None:
    factory = _factory(docker_ready, sandbox_settings, sandbox_image, "no-such-runtime")
    with pytest.raises(docker.errors.APIError, match="no-such-runtime"):
        factory.create(tmp_path, network=False, slot=False)
