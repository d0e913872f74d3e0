"""Warm pool of hardened sandbox containers.

Two kinds of warm container cut the ~250 ms create+start cost:

* spares — started ahead of time per (image, network) with an empty *slot*
  directory bind-mounted at ``/workspace``. A session claims one by renaming
  the slot directory onto its workspace path (see ``workspace.adopt_slot``).
* session containers — after an exec a container stays bound to its session
  and is reused by that session's next exec until idle for
  ``sandbox_pool_idle_s``.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from pathlib import Path

import docker
import docker.errors

from services.common.metrics import SANDBOX_START_DURATION, SANDBOX_WARM_POOL
from services.sandbox.backends.docker.containers import ContainerFactory, Slot, dir_inode
from services.sandbox.settings import SandboxSettings
from services.sandbox.workspace import adopt_slot, prepare_workspace

log = logging.getLogger(__name__)

SLOTS_DIRNAME = ".sandbox-slots"


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
        started = time.perf_counter()
        slot, warm = self._checkout(session_key, workspace, network=network)
        SANDBOX_START_DURATION.labels("docker", "true" if warm else "false").observe(
            time.perf_counter() - started
        )
        self._report_size()
        return slot, warm

    def _checkout(self, session_key: str, workspace: Path, *, network: bool) -> tuple[Slot, bool]:
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
            self._prepare(workspace)
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
        self._report_size()

    def forget(self, session_key: str) -> bool:
        """Remove the idle container kept for ``session_key`` (its session was deleted)."""
        with self._lock:
            slot = self._idle.pop(session_key, None)
        if slot is None:
            return False
        self.factory.remove(slot)
        self._report_size()
        return True

    def _prepare(self, path: Path) -> None:
        uid, gid = self.settings.sandbox_uid_gid
        prepare_workspace(path, sandbox_uid=uid, sandbox_gid=gid)

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
            self._prepare(slot_dir)
            try:
                spare = self.factory.create(slot_dir, network=False, slot=True)
            except docker.errors.DockerException:
                shutil.rmtree(slot_dir, ignore_errors=True)
                raise
            with self._lock:
                self._spares[False].append(spare)
            started += 1
            self._report_size()

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
        self._report_size()
        return len(victims)

    def _report_size(self) -> None:
        with self._lock:
            size = self._count_locked()
        SANDBOX_WARM_POOL.labels("docker").set(size)

    def _count_locked(self) -> int:
        return len(self._idle) + sum(len(v) for v in self._spares.values())

    def spare_count(self) -> int:
        """Spares started and ready to be claimed (no network; the ones refill keeps)."""
        with self._lock:
            return len(self._spares[False])

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
        self._report_size()
        for slot in slots:
            self.factory.remove(slot)
            if slot.mount_dir.parent == self.slots_dir:
                shutil.rmtree(slot.mount_dir, ignore_errors=True)
