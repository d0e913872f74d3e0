"""Docker backend: code runs in warm, hardened containers (see pool.py, containers.py).

Each warm container runs the in-container runner (services/sandbox/runner),
which takes execs over the container's attached stdin: no ``docker exec`` per
call. A container without a working runner gets ``docker exec`` instead.
Limits that need a view from outside (wall clock, output volume, workspace
growth) are enforced here by killing the whole container; the wall clock and the
disk polls of every running exec are kept by one watchdog thread (watchdog.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker
import docker.errors

from services.sandbox.backends.base import (
    WORKSPACE_MOUNT,
    ExecOutcome,
    ExecRequest,
    LifecycleSink,
    SandboxBackend,
    SandboxUnavailable,
)
from services.sandbox.backends.docker.containers import ContainerFactory, Slot, kill_quietly
from services.sandbox.backends.docker.orphans import reap_orphans
from services.sandbox.backends.docker.pool import WarmPool
from services.sandbox.backends.docker.watchdog import Poll, Watchdog
from services.sandbox.image import docker_client, image_exists, image_tag
from services.sandbox.output import BoundedOutput
from services.sandbox.runner.channel import OutputSink, RunnerError, RunnerNotStarted
from services.sandbox.runner.sandbox_runner import OOM_COUNTERS
from services.sandbox.settings import SandboxSettings
from services.sandbox.workspace import workspace_bytes

log = logging.getLogger(__name__)

# Runs before every `docker exec` in a reused container: kill what an earlier
# exec left running (except PID 1 -- tini, or the runner -- and the container's
# own `sleep infinity`; PIDs are not predictable, so the keeper is known by its
# command line), then clear the umask: inside the workspace its default ACL
# (see services/sandbox/workspace.py) decides who may use new files, so the
# agent's file tools can edit what the sandbox wrote and nobody else can.
PRELUDE = (
    "for d in /proc/[0-9]*; do p=${d#/proc/}; "
    'if [ "$p" -eq 1 ] || [ "$p" -eq $$ ]; then continue; fi; '
    "c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null); "
    'if [ "$c" = "sleep infinity " ]; then continue; fi; '
    'kill -9 "$p" 2>/dev/null; done; '
    'umask 000; exec "$@"'
)
EXEC_ENV = {"HOME": "/tmp", "MPLBACKEND": "Agg"}
QUOTA_CHECK_EVERY_S = 1.0


class ContainerGone(RuntimeError):
    """The container died before the exec started anything."""


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
        self.watchdog = Watchdog()

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
        if request.allow_network:
            # Also for a warm container already on the network: its rules must still hold.
            self.factory.egress.network()
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
        kill_reason: list[str] = []
        api = self.client.api

        def kill(reason: str) -> None:
            if not kill_reason:
                kill_reason.append(reason)
                on_event("sandbox_kill", {"sandbox_id": slot.id, "reason": reason})
                # Docker's kill waits for the exec's output to be consumed, so it
                # runs aside while the reader keeps draining the stream to EOF.
                threading.Thread(
                    target=kill_quietly, args=(api, slot.container.id), daemon=True
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

        watch = self.watchdog.watch(
            timeout_s=request.timeout_s,
            poll=self._disk_poll(request),
            poll_every_s=QUOTA_CHECK_EVERY_S,
            kill=kill,
        )
        try:
            healthy, via = self._dispatch(slot, request, outcome, feed, kill_reason)
        finally:
            watch.stop()  # no kill after this: kill_reason is final
        self._fill(outcome, stdout, stderr, kill_reason)
        if outcome.timed_out:
            on_event("sandbox_timeout", {"sandbox_id": slot.id, "timeout_s": request.timeout_s})
        on_event(
            "sandbox_end",
            {
                "sandbox_id": slot.id,
                "exit_code": outcome.exit_code,
                "killed_reason": outcome.killed_reason,
                "oom_killed": outcome.oom_killed,
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
                if not kill_reason:
                    outcome.oom_killed = bool(self._state(slot).get("OOMKilled"))
                return False, "runner"
            else:
                outcome.exit_code = result.exit_code
                outcome.oom_killed = result.oom_killed
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
            # Docker's OOMKilled flag stays set for the container's life, so a
            # container that saw an OOM kill is not reused: the flag means this run.
            state = self._state(slot)
            outcome.oom_killed = bool(state.get("OOMKilled")) or self._oom_counted(slot)
            return bool(state.get("Running")) and not outcome.oom_killed
        return True

    def _oom_counted(self, slot: Slot) -> bool:
        """Whether the container's own OOM-kill counter rose since last read.

        Docker sets OOMKilled only when the container's main process dies on
        some hosts (cgroup v1), so a killed exec child is seen in the counter.
        """
        api = self.client.api
        try:
            exec_id = api.exec_create(
                slot.container.id, ["cat", *OOM_COUNTERS], user=self.settings.sandbox_user
            )["Id"]
            text = bytes(api.exec_start(exec_id)).decode(errors="replace")
        except docker.errors.APIError:
            return False
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                seen, slot.oom_kills = slot.oom_kills, int(value)
                return slot.oom_kills > seen
        return False

    def _running(self, slot: Slot) -> bool:
        return bool(self._state(slot).get("Running"))

    def _state(self, slot: Slot) -> dict[str, Any]:
        """Docker's view of the container (empty once it is gone)."""
        try:
            return dict(self.client.api.inspect_container(slot.container.id)["State"])
        except docker.errors.NotFound:
            return {}

    def _disk_poll(self, request: ExecRequest) -> Poll:
        """The workspace disk check the watchdog runs each second during the exec.

        Disk: the absolute limit of the request (the workspace's cap or its
        user's remainder) and the growth per exec; what a poll misses the
        service takes back after the run. The wall clock is the watchdog's own.
        """
        quota = self.settings.sandbox_workspace_quota_mb * 1024 * 1024
        known = request.workspace_bytes
        base = workspace_bytes(request.workspace) if known is None else known
        limit = request.disk_limit_bytes

        def poll() -> str | None:
            used = workspace_bytes(request.workspace)
            if used - base > quota or (limit is not None and used > limit):
                return "workspace_quota"
            return None

        return poll

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
        return reap_orphans(
            self.client,
            owner=self.owner,
            pooled=self.pool.container_ids(),
            slots_dir=self.pool.slots_dir,
            alive=alive,
        )

    def spares(self) -> int:
        return self.pool.spare_count()

    def forget(self, session_key: str) -> None:
        self.pool.forget(session_key)

    def maintain(self) -> None:
        """Periodic upkeep: evict idle containers and top up spares."""
        self.pool.evict_idle()
        self.pool.refill()

    def close(self) -> None:
        self.pool.drain()
        self.watchdog.close()
