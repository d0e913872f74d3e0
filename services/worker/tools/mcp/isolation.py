"""A stdio MCP server inside a sandbox container: ``docker run -i --rm`` with no network.

The server's command runs in the sandbox image under the sandbox's own hardening
(:func:`services.common.sandbox_container.hardened_options`: read-only root, all
capabilities dropped, no new privileges, the sandbox user, memory/CPU/pids/
open-file limits, a small ``/tmp``) and ``--network none``: it can reach
nothing, not the internet, not this host's loopback services, not the worker's
database. The MCP SDK's stdio client talks to the container's stdin/stdout
through the ``docker run`` process.

The Python environment that holds the servers (``LEAFLAB_MCP_PYTHON_ENV``,
default the worker's own ``sys.prefix``) and the interpreter it was made from
are mounted read-only at their own paths, so a venv's absolute paths (its
``bin/python`` link, console-script shebangs) hold inside; ``<env>/bin`` leads
the container's ``PATH``. It must be a virtual environment; an interpreter under
``/usr`` is not mounted (the image's own at that path serves, if it is the same
version), nor is anything that would hide the image's system directories.
A top-level directory above a mount that is not one of the image's own
(``/root``, ``/home``, ``/work`` …) is covered first by a read-only skeleton
(empty 0755 directories down to the mount points), so the sandbox user can walk
down to the mount even where the image's directory is private (``/root`` is
0700; a tmpfs would not do: Docker copies the image directory's mode onto it).

The server sees only ``HOME``/``TMPDIR`` (its private ``/tmp``), a locale and
``PATH``. A server registered with ``"isolation": "none"`` runs as before, as a
plain child of the worker (see connection.py) — for trusted servers only.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

from mcp import StdioServerParameters

from services.common.sandbox_container import (
    SandboxContainerSettings,
    docker_run_args,
    hardened_options,
    image_tag,
)
from services.worker.tools.mcp.settings import McpServerConfig

LABEL_SERVER = "leaflab.mcp.server"
# Top-level directories of the image that must never be hidden by a traversal tmpfs.
IMAGE_TOPS = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "run",
     "sbin", "srv", "sys", "tmp", "usr", "var", "workspace"}
)  # fmt: skip


class IsolationUnavailable(ValueError):
    """The Python environment cannot be mounted into a sandbox container."""


def _replaces_the_image(path: Path) -> bool:
    # Mounting at /, a top-level directory or /usr/local would hide the image's own.
    return len(path.parts) <= 2 or path in (Path("/usr/local"), Path("/usr/lib"))


def python_mounts(env: Path) -> list[Path]:
    """The environment's paths to mount: itself (as given and resolved) and the
    prefix of the interpreter it was made from (from its ``pyvenv.cfg``), unless
    that prefix is a system one (``/usr``: the image's interpreter at that path
    serves, when it is the same Python version)."""
    cfg = env / "pyvenv.cfg"
    if not cfg.is_file() or _replaces_the_image(env.resolve()):
        raise IsolationUnavailable(
            f"{env} is not a virtual environment (no pyvenv.cfg): isolated MCP servers "
            "need one (LEAFLAB_MCP_PYTHON_ENV), to be mounted read-only into the sandbox"
        )
    paths = [env, env.resolve()]
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        prefix = Path(value.strip()).resolve().parent if value.strip() else None
        if key.strip() == "home" and prefix is not None and not _replaces_the_image(prefix):
            paths.append(prefix)
    unique: list[Path] = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return unique


def skeletons(mounts: list[Path], home: Path) -> dict[str, Path]:
    """Per top-level directory outside the image's own: a host directory of empty
    0755 directories down to each mount point under it (Docker mounts the
    skeleton first, then the deeper binds onto its directories)."""
    found: dict[str, Path] = {}
    for path in mounts:
        if len(path.parts) < 3 or path.parts[1] in IMAGE_TOPS:
            continue
        top = path.parts[1]
        skeleton = found.setdefault(top, home / f"skeleton-{top}")
        skeleton.mkdir(mode=0o755, exist_ok=True)
        inner = skeleton.joinpath(*path.parts[2:])
        inner.mkdir(mode=0o755, parents=True, exist_ok=True)
        for folder in [skeleton, *inner.relative_to(skeleton).parents]:
            (skeleton / folder).chmod(0o755)  # whatever the umask made of them
    return found


def container_name(server: str) -> str:
    return f"leaflab-mcp-{server}-{uuid.uuid4().hex[:10]}"


def isolated_parameters(
    config: McpServerConfig,
    *,
    name: str,
    home: Path,
    docker_cli: str,
    python_env: Path | None,
    container: SandboxContainerSettings | None = None,
) -> StdioServerParameters:
    """How to start ``config``'s command inside a sandbox container named ``name``."""
    assert config.command is not None
    limits = container or SandboxContainerSettings()
    env = (python_env or Path(sys.prefix)).absolute()
    mounts = python_mounts(env)
    volumes = {str(p): {"bind": str(p), "mode": "ro"} for p in mounts}
    options = hardened_options(
        limits,
        network_mode="none",
        volumes=volumes,
        working_dir="/tmp",
        labels={LABEL_SERVER: config.name},
        hostname=f"mcp-{config.name}"[:63],
    )
    masks = [
        arg
        for top, skeleton in skeletons(mounts, home).items()
        for arg in ("--volume", f"{skeleton}:/{top}:ro")
    ]
    inner_env = {
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PATH": f"{env}/bin:/usr/local/bin:/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    args = [
        "run", "-i", "--rm", "--init", "--name", name, "--log-driver", "none",
        *docker_run_args(options), *masks,
        *(arg for key, value in inner_env.items() for arg in ("--env", f"{key}={value}")),
        image_tag(limits), *config.command,
    ]  # fmt: skip
    return StdioServerParameters(
        command=docker_cli, args=args, env=docker_cli_environment(home), cwd=str(home)
    )


def docker_cli_environment(home: Path) -> dict[str, str]:
    """What the ``docker`` client process sees: where the daemon is, nothing else."""
    env = {"HOME": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env["PATH"] = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    for key in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env
