"""Settings of the sandbox service (env prefix ``LEAFLAB_``, e.g. ``LEAFLAB_SANDBOX_BACKEND``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from services.common.sandbox_container import SandboxContainerSettings
from services.common.settings import CommonSettings


class SandboxSettings(CommonSettings, SandboxContainerSettings):
    sandbox_backend: Literal["docker", "bwrap"] = "docker"
    # Image (sandbox_image, sandbox_image_repo): SandboxContainerSettings.
    # How `ensure_image` builds a missing image: the Dockerfile, the offline
    # debootstrap recipe, or the Dockerfile first and offline when it fails.
    sandbox_build: Literal["auto", "dockerfile", "offline"] = "auto"
    # The lock that makes a missing image one build per machine (Docker's image
    # store is the machine's, whatever LEAFLAB_HOME each caller has). Unset:
    # /var/lib/leaflab/image-build.lock beside Docker's data when that can be
    # created, else ~/.cache/leaflab/image-build.lock.
    sandbox_image_lock: Path | None = None
    # Root filesystem for the bwrap backend; unset means the host's system dirs.
    sandbox_bwrap_rootfs: Path | None = None

    # Network-enabled sandboxes (a project's allow_network) join this Docker network,
    # which Leaflab makes, with egress rules installed by these commands (the iptables
    # dockerd uses) that keep them off this host and private ranges; without the rules
    # such execs are refused (see services/sandbox/backends/docker/egress.py).
    sandbox_egress_network: str = Field(
        default="leaflab-sandbox-egress", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    )
    sandbox_egress_iptables: str = "iptables"
    sandbox_egress_ip6tables: str = "ip6tables"

    # Limits applied to every execution (user, memory, CPUs, pids, tmpfs, file
    # size, open files, OCI runtime): SandboxContainerSettings, shared with the
    # isolated MCP servers (services/common/sandbox_container.py).
    sandbox_timeout_default_s: float = Field(default=30.0, gt=0)
    sandbox_timeout_max_s: float = Field(default=180.0, gt=0)
    # What the model sees of each stream (head + tail), and the total output
    # after which the execution is killed (so a runaway print cannot burn CPU).
    sandbox_output_cap_bytes: int = Field(default=32_000, ge=256)
    sandbox_output_kill_bytes: int = Field(default=16_000_000, ge=1024)
    # The workspace is a host directory: keep its growth per exec bounded.
    sandbox_workspace_quota_mb: int = Field(default=512, ge=1)
    # Workspaces of deleted sessions are removed when the API asks, and by a
    # sweep every this many seconds (for a crash between the delete and the rm);
    # a directory of a session unknown to the database is removed once older
    # than the grace (it may belong to a session being created right now).
    sandbox_workspace_sweep_s: float = Field(default=60.0, gt=0)
    sandbox_workspace_orphan_grace_s: float = Field(default=300.0, ge=0)

    # Artifacts (new or changed workspace files after an exec) kept in Postgres.
    sandbox_artifact_max_bytes: int = Field(default=10_000_000, ge=1)
    sandbox_artifact_max_count: int = Field(default=20, ge=0)

    # Warm pool (docker): spare containers per (image, network) for new
    # sessions, and a session's container kept warm between its execs.
    sandbox_pool_spares: int = Field(default=2, ge=0)
    sandbox_pool_max: int = Field(default=16, ge=1)
    sandbox_pool_idle_s: float = Field(default=300.0, gt=0)
    sandbox_janitor_interval_s: float = Field(default=10.0, gt=0)
    sandbox_heartbeat_ttl_s: float = Field(default=20.0, gt=0)
    # Warm containers run a long-lived runner (services/sandbox/runner, mounted
    # read-only) that takes execs over the attached stdin: no `docker exec` per
    # call. Off, or when the runner cannot start, execs use `docker exec`.
    sandbox_runner: bool = True
    sandbox_runner_ready_s: float = Field(default=20.0, gt=0)
    # `python3 -c` execs as forks of the runner's interpreter (no start-up cost).
    sandbox_runner_fork: bool = True
    # Host path of the runner directory as the Docker daemon sees it (set when
    # the worker runs in a container whose paths differ from the daemon's).
    sandbox_runner_dir: Path | None = None
    # Value of the ``leaflab.sandbox.run`` label on every container this worker
    # starts, so one stack or test run can find exactly its own containers.
    sandbox_run_label: str = ""

    @model_validator(mode="after")
    def _check_sandbox_limits(self) -> SandboxSettings:
        # The Celery task must finish (and clean up) before its soft limit.
        if self.sandbox_timeout_max_s + 30 >= self.task_soft_time_limit_s:
            raise ValueError(
                "sandbox_timeout_max_s + 30 must be < task_soft_time_limit_s "
                f"({self.sandbox_timeout_max_s} + 30 >= {self.task_soft_time_limit_s})"
            )
        if self.sandbox_output_kill_bytes < self.sandbox_output_cap_bytes:
            raise ValueError("sandbox_output_kill_bytes must be >= sandbox_output_cap_bytes")
        return self

    @property
    def sandbox_uid_gid(self) -> tuple[int, int]:
        uid, _, gid = self.sandbox_user.partition(":")
        return int(uid), int(gid or uid)


@lru_cache(maxsize=1)
def get_sandbox_settings() -> SandboxSettings:
    """Process-wide sandbox settings; tests call ``cache_clear()`` after env changes."""
    return SandboxSettings()
