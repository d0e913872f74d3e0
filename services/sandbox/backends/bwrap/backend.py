"""Bubblewrap backend for machines without Docker.

Each exec is a fresh bwrap process: every namespace unshared (so no network
at all), a read-only root (the offline image's root
filesystem when available, else the host's system directories), a tmpfs
/tmp, the workspace at /workspace, no capabilities, and rlimits for memory,
processes, file size and open files. When the worker runs as root, bwrap
sets up the mounts as root (so workspaces under /root are reachable) without a
user namespace, and the command runs as the unprivileged sandbox uid
(setpriv, no capabilities, no-new-privs), so the process limit counts that uid.

Network-enabled execs are refused (``sandbox_network_unavailable``): bwrap's
only way to give a sandbox the network is to share this host's network
namespace, where the host's loopback and every address it listens on are as
reachable as the outside world. Such projects need the Docker backend.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from services.sandbox.backends.base import (
    WORKSPACE_MOUNT,
    ExecOutcome,
    ExecRequest,
    LifecycleSink,
    SandboxBackend,
    SandboxNetworkUnavailable,
)
from services.sandbox.image import image_tag
from services.sandbox.output import BoundedOutput
from services.sandbox.settings import SandboxSettings
from services.sandbox.workspace import prepare_workspace

HOST_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
READ_CHUNK = 65536


class BwrapBackend(SandboxBackend):
    name = "bwrap"

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.rootfs = settings.sandbox_bwrap_rootfs or self._built_rootfs()

    def _built_rootfs(self) -> Path | None:
        # build_offline keeps its root filesystem here; it has the image's libraries.
        candidate = self.settings.home / "sandbox-rootfs" / image_tag(self.settings).rsplit(":")[-1]
        return candidate if (candidate / "usr" / "bin" / "python3").exists() else None

    def command(self, request: ExecRequest) -> list[str]:
        """The full argv: rlimits, then bwrap, then (as root) the drop to the sandbox uid."""
        s = self.settings
        mem = s.sandbox_memory_mb * 1024 * 1024
        fsize = s.sandbox_file_size_mb * 1024 * 1024
        argv = [
            "prlimit",
            f"--as={mem}",
            f"--nproc={s.sandbox_pids}",
            f"--fsize={fsize}",
            f"--nofile={s.sandbox_nofile}",
            "--core=0",
            "--",
            "bwrap",
        ]
        argv += self._namespaces()
        argv += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
        argv += self._root_binds()
        argv += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(s.sandbox_tmpfs_mb * 1024 * 1024),
            "--tmpfs",
            "/tmp",
            "--bind",
            str(request.workspace),
            WORKSPACE_MOUNT,
            "--chdir",
            WORKSPACE_MOUNT,
            "--clearenv",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "PATH",
            SANDBOX_PATH,
            "--setenv",
            "MPLBACKEND",
            "Agg",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--",
        ]
        argv += self._drop_privileges()
        return argv + ["/bin/sh", "-c", 'umask 000; exec "$@"', "sandbox", *request.argv]

    @staticmethod
    def _namespaces() -> list[str]:
        if os.geteuid() != 0:
            # Unprivileged: a user namespace makes the rest possible.
            return ["--unshare-all", "--cap-drop", "ALL"]
        # As root no user namespace (it would map sandbox root to host root); bwrap
        # keeps only what setpriv needs to switch to the sandbox uid, then drops it.
        flags = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        return flags + [
            "--unshare-net",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_SETPCAP",
        ]

    def _drop_privileges(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        uid, gid = self.settings.sandbox_uid_gid
        return [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--no-new-privs",
            "--",
        ]

    def _root_binds(self) -> list[str]:
        if self.rootfs is not None:
            return ["--ro-bind", str(self.rootfs), "/"]
        binds: list[str] = []
        for d in HOST_SYSTEM_DIRS:
            path = Path(d)
            if path.is_symlink():
                binds += ["--symlink", os.readlink(path), d]
            elif path.exists():
                binds += ["--ro-bind", d, d]
        return binds

    def execute(self, request: ExecRequest, on_event: LifecycleSink) -> ExecOutcome:
        if request.allow_network:
            raise SandboxNetworkUnavailable(
                "the bwrap sandbox backend cannot give code the network without also giving "
                "it this host (it would share the host's network namespace); this project "
                "allows network, which needs LEAFLAB_SANDBOX_BACKEND=docker"
            )
        started = time.monotonic()
        uid, gid = self.settings.sandbox_uid_gid
        prepare_workspace(request.workspace, sandbox_uid=uid, sandbox_gid=gid)
        proc = subprocess.Popen(
            self.command(request),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        sandbox_id = f"bwrap-{proc.pid}"
        on_event(
            "sandbox_start",
            {
                "backend": self.name,
                "sandbox_id": sandbox_id,
                "warm": False,
                "network": request.allow_network,
            },
        )
        cap = self.settings.sandbox_output_cap_bytes
        stdout, stderr = BoundedOutput(cap), BoundedOutput(cap)
        readers = [
            threading.Thread(target=_pump, args=(pipe, sink), daemon=True)
            for pipe, sink in ((proc.stdout, stdout), (proc.stderr, stderr))
        ]
        for r in readers:
            r.start()
        reason = self._wait(proc, request, stdout, stderr)
        if reason is not None:
            on_event("sandbox_kill", {"sandbox_id": sandbox_id, "reason": reason})
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for r in readers:
            r.join(timeout=5)
        outcome = ExecOutcome(
            exit_code=None if reason else proc.returncode,
            stdout=stdout.text(),
            stderr=stderr.text(),
            stdout_bytes=stdout.total,
            stderr_bytes=stderr.total,
            truncated=stdout.truncated or stderr.truncated,
            timed_out=reason == "timeout",
            killed_reason=reason,
            duration_ms=(time.monotonic() - started) * 1000,
            sandbox_id=sandbox_id,
        )
        if outcome.timed_out:
            on_event("sandbox_timeout", {"sandbox_id": sandbox_id, "timeout_s": request.timeout_s})
        on_event(
            "sandbox_end",
            {"sandbox_id": sandbox_id, "exit_code": outcome.exit_code, "killed_reason": reason},
        )
        return outcome

    def _wait(
        self,
        proc: subprocess.Popen[bytes],
        request: ExecRequest,
        stdout: BoundedOutput,
        stderr: BoundedOutput,
    ) -> str | None:
        """Wait for exit; the reason to kill when a limit is hit first."""
        deadline = time.monotonic() + request.timeout_s
        while True:
            try:
                proc.wait(timeout=0.05)
                return None
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                return "timeout"
            if stdout.total + stderr.total > self.settings.sandbox_output_kill_bytes:
                return "output_limit"


def _pump(pipe: IO[bytes] | None, sink: BoundedOutput) -> None:
    """Drain a pipe into a bounded buffer (the pipe must keep flowing)."""
    if pipe is None:
        return
    with pipe:
        while chunk := pipe.read1(READ_CHUNK):  # type: ignore[attr-defined]
            sink.feed(chunk)
