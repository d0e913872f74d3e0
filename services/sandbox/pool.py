"""Warm pool of hardened sandbox containers.

Two kinds of warm container cut the ~250 ms create+start cost:

* spares — started ahead of time per (image, network) with an empty *slot*
  directory bind-mounted at ``/workspace``. A session claims one by renaming
  the slot directory onto its workspace path (a rename keeps the inode, so the
  container's mount now shows the session's files); existing files are moved
  in by rename too, never copied.
* session containers — after an exec a container stays bound to its session
  and is reused by that session's next exec until idle for
  ``sandbox_pool_idle_s``.

Every container carries the ``leaflab.sandbox=1`` label plus its owner, so a
janitor can reap those of dead workers.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container
from docker.types import LogConfig, Ulimit

from services.sandbox.backend import WORKSPACE_MOUNT
from services.sandbox.runner_channel import RUNNER_ARGV, RUNNER_MOUNT, RunnerChannel, RunnerError
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

LABEL = "leaflab.sandbox"
LABEL_OWNER = "leaflab.sandbox.owner"
LABEL_SLOT = "leaflab.sandbox.slot"
SLOTS_DIRNAME = ".sandbox-slots"
RUNNER_DIR = Path(__file__).resolve().parent / "runner"
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
        self._runner_failures = 0
        self._runner_retry_at = 0.0

    def create(self, mount_dir: Path, *, network: bool, slot: bool) -> Slot:
        labels = {LABEL: "1", LABEL_OWNER: self.owner}
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
        s = self.settings
        mem = f"{s.sandbox_memory_mb}m"
        fsize = s.sandbox_file_size_mb * 1024 * 1024
        return {
            "network_mode": "bridge" if network else "none",
            "read_only": True,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "pids_limit": s.sandbox_pids,
            "mem_limit": mem,
            "memswap_limit": mem,  # equal: no swap, a balloon hits the OOM killer
            "nano_cpus": int(s.sandbox_cpus * 1e9),
            "user": s.sandbox_user,
            "tmpfs": {"/tmp": f"size={s.sandbox_tmpfs_mb}m,mode=1777,nosuid,nodev"},
            "ulimits": [
                Ulimit(name="fsize", soft=fsize, hard=fsize),
                Ulimit(name="nofile", soft=s.sandbox_nofile, hard=s.sandbox_nofile),
            ],
            "volumes": {str(mount_dir): {"bind": WORKSPACE_MOUNT, "mode": "rw"}},
            "working_dir": WORKSPACE_MOUNT,
            "hostname": "sandbox",
            "labels": labels,
            "ipc_mode": "private",
        }

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
        runner_dir = self.settings.sandbox_runner_dir or RUNNER_DIR
        return runner_dir

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


def prepare_workspace(path: Path) -> None:
    """Create the session workspace so the non-root sandbox user can write it.

    Files the sandbox creates are world-writable (umask 000 in the exec) so
    the agent's file tools, running as another user, can edit them too.
    """
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o777)  # noqa: S103 - the sandbox uid differs from the worker's


def adopt_slot(slot_dir: Path, workspace: Path) -> None:
    """Make ``workspace`` the directory mounted in a spare (see module doc)."""
    workspace.parent.mkdir(parents=True, exist_ok=True)
    if not workspace.exists():
        os.rename(slot_dir, workspace)
        return
    aside = workspace.parent / f".{workspace.name}.swap-{uuid.uuid4().hex[:8]}"
    os.rename(workspace, aside)
    try:
        os.rename(slot_dir, workspace)
    except OSError:
        os.rename(aside, workspace)
        raise
    for entry in os.listdir(aside):
        os.rename(aside / entry, workspace / entry)
    os.rmdir(aside)


class WarmPool:
    """Spares per network mode and idle session containers; thread-safe."""

    def __init__(self, factory: ContainerFactory, settings: SandboxSettings) -> None:
        self.factory = factory
        self.settings = settings
        self.slots_dir = settings.workspaces_dir / SLOTS_DIRNAME
        self._lock = threading.Lock()
        self._spares: dict[bool, list[Slot]] = {False: [], True: []}
        self._idle: dict[str, Slot] = {}
        self._busy: dict[str, int] = {}  # session key -> execs in flight

    def checkout(self, session_key: str, workspace: Path, *, network: bool) -> tuple[Slot, bool]:
        """A container bound to ``workspace``; the flag says whether it was warm."""
        with self._lock:
            slot = self._idle.pop(session_key, None)
            busy = self._busy.get(session_key, 0)
            self._busy[session_key] = busy + 1
        try:
            if slot is not None:
                if slot.network == network and self._still_bound(slot, workspace):
                    slot.last_used = time.monotonic()
                    return slot, True
                self.factory.remove(slot)
            if busy == 0:
                spare = self._claim_spare(workspace, network)
                if spare is not None:
                    spare.session_key = session_key
                    return spare, True
            prepare_workspace(workspace)
            cold = self.factory.create(workspace, network=network, slot=False)
            cold.session_key = session_key
            return cold, False
        except BaseException:
            self._release_busy(session_key)
            raise

    def checkin(self, slot: Slot, *, reusable: bool) -> None:
        """Return a container after an exec; broken or killed ones are removed."""
        key = slot.session_key or ""
        self._release_busy(key)
        evicted: Slot | None = None
        if reusable:
            slot.last_used = time.monotonic()
            with self._lock:
                evicted = self._idle.pop(key, None)
                self._idle[key] = slot
        else:
            evicted = slot
        if evicted is not None:
            self.factory.remove(evicted)

    def _release_busy(self, key: str) -> None:
        with self._lock:
            left = self._busy.get(key, 1) - 1
            if left <= 0:
                self._busy.pop(key, None)
            else:
                self._busy[key] = left

    def _still_bound(self, slot: Slot, workspace: Path) -> bool:
        # Another worker may have swapped the directory; never run in a stale mount.
        try:
            return dir_inode(workspace) == slot.inode
        except OSError:
            return False

    def _claim_spare(self, workspace: Path, network: bool) -> Slot | None:
        with self._lock:
            spare = self._spares[network].pop() if self._spares[network] else None
        if spare is None:
            return None
        try:
            adopt_slot(spare.mount_dir, workspace)
            os.chmod(workspace, 0o777)  # noqa: S103 - see prepare_workspace
        except OSError as exc:
            log.warning("could not adopt spare %s for %s: %s", spare.id, workspace, exc)
            self.factory.remove(spare)
            shutil.rmtree(spare.mount_dir, ignore_errors=True)
            return None
        spare.mount_dir = workspace
        spare.inode = dir_inode(workspace)
        return spare

    def refill(self) -> int:
        """Start spares up to ``sandbox_pool_spares`` (no network); returns how many."""
        started = 0
        while True:
            with self._lock:
                if len(self._spares[False]) >= self.settings.sandbox_pool_spares:
                    return started
                if self._count_locked() >= self.settings.sandbox_pool_max:
                    return started
            self.slots_dir.mkdir(parents=True, exist_ok=True)
            slot_dir = self.slots_dir / uuid.uuid4().hex
            prepare_workspace(slot_dir)
            try:
                spare = self.factory.create(slot_dir, network=False, slot=True)
            except docker.errors.DockerException:
                shutil.rmtree(slot_dir, ignore_errors=True)
                raise
            with self._lock:
                self._spares[False].append(spare)
            started += 1

    def evict_idle(self) -> int:
        """Remove session containers idle too long, and the oldest over the cap."""
        now = time.monotonic()
        with self._lock:
            stale = [
                k
                for k, s in self._idle.items()
                if now - s.last_used > self.settings.sandbox_pool_idle_s
            ]
            victims = [self._idle.pop(k) for k in stale]
            by_age = sorted(self._idle.items(), key=lambda kv: kv[1].last_used)
            while by_age and self._count_locked() > self.settings.sandbox_pool_max:
                key, slot = by_age.pop(0)
                victims.append(self._idle.pop(key))
        for slot in victims:
            self.factory.remove(slot)
        return len(victims)

    def _count_locked(self) -> int:
        return len(self._idle) + sum(len(v) for v in self._spares.values())

    def container_ids(self) -> set[str]:
        with self._lock:
            slots = list(self._idle.values()) + [s for v in self._spares.values() for s in v]
        return {str(s.container.id) for s in slots}

    def drain(self) -> None:
        """Remove every pooled container and slot directory."""
        with self._lock:
            slots = list(self._idle.values()) + [s for v in self._spares.values() for s in v]
            self._idle.clear()
            self._spares = {False: [], True: []}
        for slot in slots:
            self.factory.remove(slot)
            if slot.mount_dir.parent == self.slots_dir:
                shutil.rmtree(slot.mount_dir, ignore_errors=True)
