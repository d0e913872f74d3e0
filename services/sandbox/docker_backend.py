"""Docker backend: code runs in warm, hardened containers (see pool.py).

Each warm container runs the in-container runner (runner/sandbox_runner.py),
which takes execs over the container's attached stdin: no ``docker exec`` per
call. A container without a working runner gets ``docker exec`` instead.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors

from services.sandbox.backend import (
    WORKSPACE_MOUNT,
    ExecOutcome,
    ExecRequest,
    LifecycleSink,
    SandboxBackend,
    SandboxUnavailable,
)
from services.sandbox.image import docker_client, image_exists, image_tag
from services.sandbox.output import BoundedOutput
from services.sandbox.pool import (
    LABEL,
    LABEL_OWNER,
    LABEL_SLOT,
    ContainerFactory,
    Slot,
    WarmPool,
    remove_container,
)
from services.sandbox.runner_channel import OutputSink, RunnerError, RunnerNotStarted
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

# Runs before every `docker exec` in a reused container: kill what an earlier
# exec left running (except PID 1 -- tini, or the runner -- and the container's
# own `sleep infinity`;
# PIDs are not predictable, so the keeper is known by its command line), then
# open up the umask so the agent's file tools can edit what the sandbox wrote.
PRELUDE = (
    "for d in /proc/[0-9]*; do p=${d#/proc/}; "
    'if [ "$p" -eq 1 ] || [ "$p" -eq $$ ]; then continue; fi; '
    "c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); "
    'if [ "$c" = "sleep infinity " ]; then continue; fi; '
    'kill -9 "$p" 2>/dev/null; done; '
    'umask 000; exec "$@"'
)
EXEC_ENV = {"HOME": "/tmp", "MPLBACKEND": "Agg"}
WATCH_INTERVAL_S = 0.2
QUOTA_CHECK_EVERY_S = 1.0


class ContainerGone(RuntimeError):
    """The container died before the exec started anything."""


def workspace_bytes(root: Path) -> int:
    """Total size of regular files under ``root`` (symlinks not followed)."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(self, settings: SandboxSettings, *, owner: str) -> None:
        self.settings = settings
        self.owner = owner
        self.client = docker_client()
        self.image = image_tag(settings)
        if not image_exists(self.client, self.image):
            raise SandboxUnavailable(
                f"sandbox image {self.image} is missing; run `leaflab sandbox build-image`"
            )
        self.factory = ContainerFactory(self.client, settings, self.image, owner)
        self.pool = WarmPool(self.factory, settings)

    def start(self) -> None:
        self.pool.refill()

    def execute(self, request: ExecRequest, on_event: LifecycleSink) -> ExecOutcome:
        started = time.monotonic()
        try:
            outcome = self._attempt(request, on_event)
        except ContainerGone as exc:
            # Nothing ran (the runner lost the request before starting it and its
            # container is dead): one retry in another container is safe.
            log.warning("sandbox container lost before the exec started (%s); retrying", exc)
            try:
                outcome = self._attempt(request, on_event)
            except ContainerGone as again:
                raise SandboxUnavailable(f"sandbox containers keep dying: {again}") from again
        outcome.duration_ms = (time.monotonic() - started) * 1000
        return outcome

    def _attempt(self, request: ExecRequest, on_event: LifecycleSink) -> ExecOutcome:
        slot, warm = self.pool.checkout(
            request.session_key, request.workspace, network=request.allow_network
        )
        on_event(
            "sandbox_start",
            {
                "backend": self.name,
                "sandbox_id": slot.id,
                "warm": warm,
                "image": self.image,
                "network": request.allow_network,
                "runner": slot.runner is not None,
            },
        )
        outcome = ExecOutcome(
            exit_code=None,
            stdout="",
            stderr="",
            stdout_bytes=0,
            stderr_bytes=0,
            truncated=False,
            warm=warm,
            sandbox_id=slot.id,
        )
        reusable = False
        try:
            reusable = self._run(slot, request, outcome, on_event)
        finally:
            self.pool.checkin(slot, reusable=reusable)
            if not reusable:
                on_event("sandbox_cleanup", {"sandbox_id": slot.id, "removed": True})
        return outcome

    def _run(
        self, slot: Slot, request: ExecRequest, outcome: ExecOutcome, on_event: LifecycleSink
    ) -> bool:
        """Run and stream; returns whether the container may be reused.

        Through the container's runner when it has a working one, else (or when
        the runner loses the request before starting it) with `docker exec`.
        Limits are enforced from here either way: the watchdog and the output
        cap kill the whole container.
        """
        stdout = BoundedOutput(self.settings.sandbox_output_cap_bytes)
        stderr = BoundedOutput(self.settings.sandbox_output_cap_bytes)
        done = threading.Event()
        kill_reason: list[str] = []
        api = self.client.api

        def kill(reason: str) -> None:
            if not kill_reason:
                kill_reason.append(reason)
                on_event("sandbox_kill", {"sandbox_id": slot.id, "reason": reason})
                # Docker's kill waits for the exec's output to be consumed, so it
                # runs aside while the reader keeps draining the stream to EOF.
                threading.Thread(
                    target=_kill_quietly, args=(api, slot.container.id), daemon=True
                ).start()

        def feed(out: bytes | None, err: bytes | None) -> None:
            if kill_reason:
                return  # killed: drain what is in flight, keep nothing more
            if out:
                stdout.feed(out)
            if err:
                stderr.feed(err)
            if stdout.total + stderr.total > self.settings.sandbox_output_kill_bytes:
                kill("output_limit")

        watchdog = threading.Thread(
            target=self._watch,
            args=(request, done, kill, lambda: stdout.total + stderr.total),
            daemon=True,
        )
        watchdog.start()
        try:
            healthy, via = self._dispatch(slot, request, outcome, feed, kill_reason)
        finally:
            done.set()
            watchdog.join(timeout=5)
        self._fill(outcome, stdout, stderr, kill_reason)
        if outcome.timed_out:
            on_event("sandbox_timeout", {"sandbox_id": slot.id, "timeout_s": request.timeout_s})
        on_event(
            "sandbox_end",
            {
                "sandbox_id": slot.id,
                "exit_code": outcome.exit_code,
                "killed_reason": outcome.killed_reason,
                "via": via,
            },
        )
        return healthy and not kill_reason

    def _dispatch(
        self,
        slot: Slot,
        request: ExecRequest,
        outcome: ExecOutcome,
        feed: OutputSink,
        kill_reason: list[str],
    ) -> tuple[bool, str]:
        """Run through the runner or `docker exec`; returns (healthy, which way)."""
        if slot.runner is not None and not slot.runner.broken:
            try:
                result = slot.runner.run(
                    request.argv,
                    cwd=WORKSPACE_MOUNT,
                    env=EXEC_ENV,
                    on_output=feed,
                    fork=self.settings.sandbox_runner_fork,
                )
            except RunnerNotStarted as exc:
                if kill_reason or not self._running(slot):
                    raise ContainerGone(str(exc)) from exc
                log.warning("runner of %s lost a request (%s); using docker exec", slot.id, exc)
            except RunnerError as exc:
                # Broken off mid-run: killed by us, or the container died (OOM, ...).
                log.warning("runner stream of %s ended: %s", slot.id, exc)
                return False, "runner"
            else:
                outcome.exit_code = result.exit_code
                return result.clean, "runner"
        return self._exec(slot, request, outcome, feed, kill_reason), "exec"

    def _exec(
        self,
        slot: Slot,
        request: ExecRequest,
        outcome: ExecOutcome,
        feed: OutputSink,
        kill_reason: list[str],
    ) -> bool:
        """One `docker exec` (the fallback path); returns whether the container is healthy."""
        api = self.client.api
        try:
            exec_id = api.exec_create(
                slot.container.id,
                ["/bin/sh", "-c", PRELUDE, "sandbox", *request.argv],
                user=self.settings.sandbox_user,
                workdir=WORKSPACE_MOUNT,
                environment=EXEC_ENV,
            )["Id"]
        except docker.errors.APIError as exc:
            if not kill_reason and not self._running(slot):
                raise ContainerGone(str(exc)) from exc
            raise
        try:
            stream: Iterator[tuple[bytes | None, bytes | None]] = api.exec_start(
                exec_id, stream=True, demux=True
            )
            for out, err in stream:
                feed(out, err)
        except (docker.errors.APIError, OSError) as exc:
            # The stream breaks when the watchdog kills the container.
            if not kill_reason:
                raise
            log.debug("exec stream ended by kill: %s", exc)
        if kill_reason:
            return False
        outcome.exit_code = api.exec_inspect(exec_id).get("ExitCode")
        if outcome.exit_code in (None, 137):
            # SIGKILL: the OOM killer, or the code killed the container's keeper.
            return self._running(slot)
        return True

    def _running(self, slot: Slot) -> bool:
        try:
            state = self.client.api.inspect_container(slot.container.id)["State"]
        except docker.errors.NotFound:
            return False
        return bool(state.get("Running"))

    def _watch(
        self,
        request: ExecRequest,
        done: threading.Event,
        kill: Callable[[str], None],
        output_total: Callable[[], int],
    ) -> None:
        """Hard wall-clock timeout and workspace quota, enforced from outside."""
        deadline = time.monotonic() + request.timeout_s
        quota = self.settings.sandbox_workspace_quota_mb * 1024 * 1024
        base = workspace_bytes(request.workspace)
        next_quota_check = time.monotonic() + QUOTA_CHECK_EVERY_S
        while not done.wait(WATCH_INTERVAL_S):
            now = time.monotonic()
            if now >= deadline:
                kill("timeout")
                return
            if now >= next_quota_check:
                next_quota_check = now + QUOTA_CHECK_EVERY_S
                if workspace_bytes(request.workspace) - base > quota:
                    kill("workspace_quota")
                    return

    @staticmethod
    def _fill(
        outcome: ExecOutcome, stdout: BoundedOutput, stderr: BoundedOutput, kill_reason: list[str]
    ) -> None:
        outcome.stdout, outcome.stderr = stdout.text(), stderr.text()
        outcome.stdout_bytes, outcome.stderr_bytes = stdout.total, stderr.total
        outcome.truncated = stdout.truncated or stderr.truncated
        if kill_reason:
            outcome.killed_reason = kill_reason[0]
            outcome.timed_out = kill_reason[0] == "timeout"

    def reap_orphans(self, alive: Callable[[str], bool] | None = None) -> int:
        """Remove labelled containers whose owning worker is gone (or that exited)."""
        mine = self.pool.container_ids()
        reaped = 0
        for c in self.client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
            owner = c.labels.get(LABEL_OWNER, "")
            if owner == self.owner:
                # Ours but not pooled and not running: a leftover of a failed exec.
                if c.id in mine or c.status == "running":
                    continue
            elif owner_alive(owner, alive):
                continue
            if remove_container(self.client, str(c.id)):
                reaped += 1
                log.info("reaped sandbox container %s (owner %s)", str(c.id)[:12], owner)
            slot_dir = c.labels.get(LABEL_SLOT)
            if slot_dir and Path(slot_dir).parent == self.pool.slots_dir:
                shutil.rmtree(slot_dir, ignore_errors=True)
        return reaped

    def maintain(self) -> None:
        """Periodic upkeep: evict idle containers and top up spares."""
        self.pool.evict_idle()
        self.pool.refill()

    def close(self) -> None:
        self.pool.drain()


def _kill_quietly(api: docker.APIClient, container_id: str) -> None:
    try:
        api.kill(container_id)
    except docker.errors.APIError:
        pass  # already gone


def owner_alive(owner: str, alive: Callable[[str], bool] | None) -> bool:
    """Whether a container's owner still runs: same-host pid check, else heartbeat.

    A live pid on this host counts as alive even without a heartbeat: workers
    configured with another Redis (another deployment or test run on the same
    Docker daemon) heartbeat where this one cannot see, and must not lose
    their containers to this janitor.
    """
    host, _, rest = owner.partition("/")
    pid_text = rest.split("/", 1)[0]
    if host == socket.gethostname() and pid_text.isdigit():
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        else:
            return True
    return alive(owner) if alive is not None else True
