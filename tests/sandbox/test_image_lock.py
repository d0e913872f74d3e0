"""Concurrent first starts build a missing sandbox image once per machine.

Two callers with different ``LEAFLAB_HOME``s (two users, two test runs) ask for
an image Docker lacks at the same moment; the build step is a fast stand-in for
the debootstrap (passed to ``ensure_image``), which really creates the tag in
the real Docker daemon. One builds; the other waits on the lock, then finds the
tag and skips.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from services.sandbox.image import ensure_image, image_exists, image_tag
from services.sandbox.settings import SandboxSettings

BUILD_S = 3.0  # long enough that the second caller surely saw the tag missing


def _tiny_image(client: docker.DockerClient, tag: str) -> None:
    """Create ``tag`` from a one-file root filesystem (what a build leaves behind)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        body = b"built by the image-lock test\n"
        info = tarfile.TarInfo("built.txt")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_data(data.getvalue(), repository=repository, tag=version)


@pytest.fixture
def repo(docker_ready: docker.DockerClient) -> Iterator[str]:
    name = f"leaflab-lock-test-{uuid.uuid4().hex[:8]}"
    yield name
    for image in docker_ready.images.list(name=name):
        for tag in image.tags:
            docker_ready.images.remove(tag, force=True)


def test_two_concurrent_first_starts_build_the_image_once(
    docker_ready: docker.DockerClient,
    sandbox_settings: SandboxSettings,
    repo: str,
    tmp_path: Path,
) -> None:
    # No lock configured: the machine's default, which must not depend on the home.
    callers = [
        sandbox_settings.model_copy(
            update={
                "home": tmp_path / f"home-{n}",
                "sandbox_image": None,
                "sandbox_image_repo": repo,
                "sandbox_image_lock": None,
            }
        )
        for n in range(2)
    ]
    tag = image_tag(callers[0])
    assert not image_exists(docker_ready, tag)
    builds: list[tuple[float, float]] = []

    def fast_build(
        client: docker.DockerClient, wanted: str, _s: SandboxSettings, _o: bool | None
    ) -> None:
        started = time.monotonic()
        time.sleep(BUILD_S)
        _tiny_image(client, wanted)
        builds.append((started, time.monotonic()))

    barrier = threading.Barrier(len(callers))
    returned: list[str] = []
    errors: list[BaseException] = []

    def first_start(settings: SandboxSettings) -> None:
        barrier.wait()
        try:
            returned.append(ensure_image(settings, build=fast_build))
        except BaseException as exc:  # reported below, with the builds seen
            errors.append(exc)

    threads = [threading.Thread(target=first_start, args=(s,)) for s in callers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert returned == [tag, tag]
    assert len(builds) == 1, f"{len(builds)} builds of one image: {builds}"
    assert image_exists(docker_ready, tag)
