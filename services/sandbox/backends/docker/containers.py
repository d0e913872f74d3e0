"""Hardened sandbox containers: how one is created, labelled, attached and removed.

Every container carries the ``leaflab.sandbox=1`` label plus its owner (so a
janitor can reap those of dead workers) and the stack's run label. Warm
containers run the in-container runner (``services/sandbox/runner``) as PID 1
with its stdin attached; when the runner cannot start, the container runs
``sleep infinity`` and execs go through ``docker exec``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.types import LogConfig

from services.common.sandbox_container import hardened_options
from services.sandbox.backends.base import WORKSPACE_MOUNT
from services.sandbox.backends.docker.egress import Egress
from services.sandbox.runner.channel import RUNNER_ARGV, RUNNER_MOUNT, RunnerChannel, RunnerError
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

LABEL = "leaflab.sandbox"
LABEL_OWNER = "leaflab.sandbox.owner"
LABEL_SLOT = "leaflab.sandbox.slot"
LABEL_RUN = "leaflab.sandbox.run"
RUNNER_DIR = Path(__file__).resolve().parents[2] / "runner"
# After this many runner start failures in a row, stop trying for a while.
RUNNER_MAX_FAILURES = 3
RUNNER_RETRY_AFTER_S = 300.0


@dataclass
class Slot:
    """One running container and what its /workspace is bound to."""

    container: Container
    network: bool
    mount_dir: Path
    session_key: str | None = None
    inode: tuple[int, int] = (0, 0)
    last_used: float = field(default_factory=time.monotonic)
    # The attached in-container runner; None for a plain `sleep infinity` container.
    runner: RunnerChannel | None = None
    # The container's OOM-kill counter when last read (`docker exec` path only).
    oom_kills: int = 0

    @property
    def id(self) -> str:
        return str(self.container.id)[:12]


def dir_inode(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


class ContainerFactory:
    """Creates and removes hardened containers for one image."""

    def __init__(
        self, client: docker.DockerClient, settings: SandboxSettings, image: str, owner: str
    ) -> None:
        self.client = client
        self.settings = settings
        self.image = image
        self.owner = owner
        self.egress = Egress(client, settings)
        self._runner_failures = 0
        self._runner_retry_at = 0.0

    def create(self, mount_dir: Path, *, network: bool, slot: bool) -> Slot:
        labels = {LABEL: "1", LABEL_OWNER: self.owner, LABEL_RUN: self.settings.sandbox_run_label}
        if slot:
            labels[LABEL_SLOT] = str(mount_dir)
        runner_dir = self._runner_dir()
        if runner_dir is not None:
            try:
                return self._create_with_runner(mount_dir, runner_dir, network, labels)
            except (RunnerError, docker.errors.DockerException) as exc:
                self._runner_failed(exc)
        container = self.client.containers.run(
            self.image,
            command=["sleep", "infinity"],
            detach=True,
            init=True,  # tini as PID 1 reaps orphans, so zombies cannot pile up
            **self._hardening(mount_dir, network, labels),
        )
        return Slot(
            container=container, network=network, mount_dir=mount_dir, inode=dir_inode(mount_dir)
        )

    def _hardening(self, mount_dir: Path, network: bool, labels: dict[str, str]) -> dict[str, Any]:
        """Container options every sandbox gets, whichever way it runs code."""
        placement: dict[str, Any] = {
            # Never Docker's default bridge: its gateway is this host (see egress.py).
            "network_mode": self.egress.network() if network else "none",
            "volumes": {str(mount_dir): {"bind": WORKSPACE_MOUNT, "mode": "rw"}},
            "working_dir": WORKSPACE_MOUNT,
            "labels": labels,
        }
        return hardened_options(self.settings, **placement)

    def _create_with_runner(
        self, mount_dir: Path, runner_dir: Path, network: bool, labels: dict[str, str]
    ) -> Slot:
        """Create, attach, then start: the runner's ready frame cannot be missed.

        The runner is PID 1 (no tini, see the runner's doc) and its output is
        not logged: exec output must not pile up in Docker's log files.
        """
        options = self._hardening(mount_dir, network, labels)
        options["volumes"][str(runner_dir)] = {"bind": RUNNER_MOUNT, "mode": "ro"}
        container = self.client.containers.create(
            self.image,
            command=RUNNER_ARGV,
            init=False,
            stdin_open=True,
            log_config=LogConfig(type="none"),
            **options,
        )
        channel: RunnerChannel | None = None
        try:
            channel = RunnerChannel.attach(self.client.api, str(container.id))
            container.start()
            channel.wait_ready(self.settings.sandbox_runner_ready_s)
        except BaseException:
            if channel is not None:
                channel.close()
            remove_container(self.client, str(container.id))
            raise
        self._runner_failures = 0
        return Slot(
            container=container,
            network=network,
            mount_dir=mount_dir,
            inode=dir_inode(mount_dir),
            runner=channel,
        )

    def _runner_dir(self) -> Path | None:
        """Where the runner comes from, or None when execs must use `docker exec`."""
        if not self.settings.sandbox_runner:
            return None
        if self._runner_failures >= RUNNER_MAX_FAILURES:
            if time.monotonic() < self._runner_retry_at:
                return None
            self._runner_failures = RUNNER_MAX_FAILURES - 1  # one more try
        return self.settings.sandbox_runner_dir or RUNNER_DIR

    def _runner_failed(self, exc: BaseException) -> None:
        self._runner_failures += 1
        log.warning(
            "sandbox runner did not start (%s); this container uses `docker exec` (%d in a row)",
            exc,
            self._runner_failures,
        )
        if self._runner_failures >= RUNNER_MAX_FAILURES:
            self._runner_retry_at = time.monotonic() + RUNNER_RETRY_AFTER_S

    def remove(self, slot: Slot) -> None:
        if slot.runner is not None:
            slot.runner.close()
        remove_container(self.client, str(slot.container.id))


def remove_container(client: docker.DockerClient, container_id: str) -> bool:
    try:
        client.api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        # "removal already in progress" is fine; anything else the janitor retries.
        log.warning("could not remove sandbox container %s: %s", container_id[:12], exc)
        return False
    return True


def kill_quietly(api: docker.APIClient, container_id: str) -> None:
    try:
        api.kill(container_id)
    except docker.errors.APIError:
        pass  # already gone
