"""The janitor's half of the Docker backend: remove containers whose worker is gone."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import docker

from services.sandbox.backends.docker.containers import (
    LABEL,
    LABEL_OWNER,
    LABEL_SLOT,
    remove_container,
)
from services.sandbox.owners import owner_alive

log = logging.getLogger(__name__)

LIVE_STATES = ("running", "restarting", "paused")
# A container of this worker that was created but not started for this long
# was abandoned (its start and its removal both failed); younger ones are being
# set up right now (create, attach, start: seconds, or more on a busy host).
SETUP_GRACE_S = 300.0


def reap_orphans(
    client: docker.DockerClient,
    *,
    owner: str,
    pooled: set[str],
    slots_dir: Path,
    alive: Callable[[str], bool] | None,
) -> int:
    """Remove labelled containers whose owning worker is gone (or that exited).

    ``pooled`` are this worker's pooled container ids; ``slots_dir`` is where
    its spares' slot directories live (removed with their containers).
    """
    reaped = 0
    # The plain list call: the SDK's containers.list() inspects each container
    # afterwards and fails on any removed meanwhile (by another janitor, say).
    for c in client.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        container_id, labels = str(c["Id"]), dict(c.get("Labels") or {})
        container_owner = labels.get(LABEL_OWNER, "")
        if container_owner == owner:
            # Ours but not pooled and not running: a leftover of a failed exec,
            # unless it is still being set up (created, not yet started) by an
            # exec thread of this very worker.
            if container_id in pooled or c.get("State") in LIVE_STATES:
                continue
            if c.get("State") == "created" and time.time() - c.get("Created", 0) < SETUP_GRACE_S:
                continue
        elif owner_alive(container_owner, alive):
            continue
        if remove_container(client, container_id):
            reaped += 1
            log.info("reaped sandbox container %s (owner %s)", container_id[:12], container_owner)
        slot_dir = labels.get(LABEL_SLOT)
        if slot_dir and Path(slot_dir).parent == slots_dir:
            shutil.rmtree(slot_dir, ignore_errors=True)
    return reaped
