"""What a sandbox container is — its image and its hardening — defined once for each
process that starts one.

The image is the configured one, else ``leaflab-sandbox:<hash of the recipe in
deploy/sandbox>`` (the sandbox builds it when missing; see services/sandbox/image.py).

The sandbox worker's containers (model-written code) and the agent worker's
isolated stdio MCP servers run under the same rules: read-only root, every
capability dropped, no new privileges, a non-root user, memory (no swap), CPU,
process, open-file and file-size limits, a small private ``/tmp``, private IPC.
:func:`hardened_options` is that set as Docker SDK keyword arguments (what the
sandbox passes to ``containers.run``); :func:`docker_run_args` spells the same
options as ``docker run`` flags (what an MCP server's stdio is piped through).
A key the flag writer does not know is an error, never skipped, so an option
added to the set cannot silently go missing from the CLI form.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

RECIPE_FILES = (
    "Dockerfile",
    "build_offline.sh",
    "provision.sh",
    "debian-packages.txt",
    "pip-requirements.txt",
)


class SandboxContainerSettings(BaseSettings):
    """Image and limits of every sandbox container (env ``LEAFLAB_SANDBOX_*``); the
    sandbox and the isolated MCP servers both read them."""

    model_config = SettingsConfigDict(env_prefix="LEAFLAB_", env_file=".env", extra="ignore")

    # Image to run; unset means the one built from deploy/sandbox (tagged by recipe hash).
    sandbox_image: str | None = None
    sandbox_image_repo: str = "leaflab-sandbox"

    # OCI runtime for sandbox containers (e.g. "runsc" for gVisor: a user-space
    # kernel between model-written code and the host's). Unset: Docker's default.
    sandbox_docker_runtime: str | None = None
    sandbox_user: str = "10001:10001"
    sandbox_memory_mb: int = Field(default=512, ge=32)
    sandbox_cpus: float = Field(default=1.0, gt=0)
    sandbox_pids: int = Field(default=128, ge=8)
    sandbox_tmpfs_mb: int = Field(default=64, ge=1)
    sandbox_file_size_mb: int = Field(default=64, ge=1)
    sandbox_nofile: int = Field(default=256, ge=16)


def recipe_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "deploy" / "sandbox"


def recipe_hash(directory: Path | None = None) -> str:
    """Short hash over the recipe files' names and contents."""
    root = directory or recipe_dir()
    digest = hashlib.sha256()
    for name in RECIPE_FILES:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def image_tag(settings: SandboxContainerSettings) -> str:
    """The image sandbox containers run: the configured one, else the recipe-hash tag."""
    if settings.sandbox_image:
        return settings.sandbox_image
    return f"{settings.sandbox_image_repo}:{recipe_hash()}"


def hardened_options(
    limits: SandboxContainerSettings,
    *,
    network_mode: str,
    volumes: dict[str, dict[str, str]],
    working_dir: str,
    labels: dict[str, str],
    hostname: str = "sandbox",
) -> dict[str, Any]:
    """Docker SDK ``containers.run``/``create`` options of a hardened container."""
    from docker.types import Ulimit  # the SDK loads only where containers are made

    mem = f"{limits.sandbox_memory_mb}m"
    fsize = limits.sandbox_file_size_mb * 1024 * 1024
    options: dict[str, Any] = {
        "network_mode": network_mode,
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": limits.sandbox_pids,
        "mem_limit": mem,
        "memswap_limit": mem,  # equal: no swap, a balloon hits the OOM killer
        "nano_cpus": int(limits.sandbox_cpus * 1e9),
        "user": limits.sandbox_user,
        "tmpfs": {"/tmp": f"size={limits.sandbox_tmpfs_mb}m,mode=1777,nosuid,nodev"},
        "ulimits": [
            Ulimit(name="fsize", soft=fsize, hard=fsize),
            Ulimit(name="nofile", soft=limits.sandbox_nofile, hard=limits.sandbox_nofile),
        ],
        "volumes": volumes,
        "working_dir": working_dir,
        "hostname": hostname,
        "labels": labels,
        "ipc_mode": "private",
    }
    if limits.sandbox_docker_runtime:
        options["runtime"] = limits.sandbox_docker_runtime
    return options


def _flags(key: str, value: Any) -> list[str]:
    simple = {
        "network_mode": "--network",
        "pids_limit": "--pids-limit",
        "mem_limit": "--memory",
        "memswap_limit": "--memory-swap",
        "user": "--user",
        "working_dir": "--workdir",
        "hostname": "--hostname",
        "ipc_mode": "--ipc",
        "runtime": "--runtime",
    }
    if key in simple:
        return [simple[key], str(value)]
    if key == "read_only":
        return ["--read-only"] if value else []
    if key == "nano_cpus":
        return ["--cpus", f"{value / 1e9:g}"]
    if key in ("cap_drop", "security_opt"):
        flag = "--cap-drop" if key == "cap_drop" else "--security-opt"
        return [part for item in value for part in (flag, item)]
    if key == "tmpfs":
        return [part for path, opts in value.items() for part in ("--tmpfs", f"{path}:{opts}")]
    if key == "ulimits":
        return [part for u in value for part in ("--ulimit", f"{u.name}={u.soft}:{u.hard}")]
    if key == "volumes":
        return [
            part
            for host, bind in value.items()
            for part in ("--volume", f"{Path(host)}:{bind['bind']}:{bind.get('mode', 'rw')}")
        ]
    if key == "labels":
        return [part for name, text in value.items() for part in ("--label", f"{name}={text}")]
    raise ValueError(f"no `docker run` flag is known for the container option {key!r}")


def docker_run_args(options: dict[str, Any]) -> list[str]:
    """``options`` (as :func:`hardened_options` builds them) as ``docker run`` flags."""
    return [flag for key, value in options.items() for flag in _flags(key, value)]
