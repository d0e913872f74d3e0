"""What ``sandbox.exec`` does: validate, claim, run in the backend, keep artifacts.

:class:`SandboxRuntime` holds the worker's clients (built at worker start,
never at import) and a janitor thread that heartbeats this worker, reaps
containers of dead workers, answers the execs they left hanging (see
``inflight``) and keeps the warm pool topped up.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

import redis
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import ColumnElement, false, func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts import keys
from services.common.db import build_engine, build_sessionmaker, transaction
from services.common.events import EventPublisher
from services.common.models.users import Project
from services.common.periodic import Periodic
from services.common.redis_client import build_redis
from services.sandbox import artifacts, executions, quota, sweep, workspace_scan
from services.sandbox.backends.base import (
    ExecOutcome,
    ExecRequest,
    SandboxBackend,
    SandboxUnavailable,
)
from services.sandbox.backends.factory import build_backend
from services.sandbox.inflight import InFlight
from services.sandbox.owners import new_owner
from services.sandbox.policy import refusal_reason
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
CLAIM_GRACE_S = 30.0
# How an exec's result reaches a caller other than through the task's return
# value (the Celery result backend): used for the execs of dead workers.
Answer = Callable[[str, dict[str, Any]], None]


class ExecPayload(BaseModel):
    """Keyword arguments of the ``sandbox.exec`` task."""

    tool_call_id: str = Field(min_length=1, max_length=200)
    job_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    language: Literal["python", "bash"]
    code: str = Field(max_length=1_000_000)
    timeout_s: float | None = Field(default=None, gt=0)


def error_result(code: str, message: str) -> dict[str, Any]:
    return {"status": "error", "error": {"code": code, "message": message}}


class SandboxRuntime:
    def __init__(
        self, settings: SandboxSettings, *, owner: str | None = None, answer: Answer | None = None
    ) -> None:
        self.settings = settings
        self.owner = owner or new_owner()
        self.answer = answer
        self.engine = build_engine(settings.require_database_url(), pool_size=4)
        self.sessions: sessionmaker[Session] = build_sessionmaker(self.engine)
        self.owners = quota.Owners(self.sessions)
        self.redis: redis.Redis = build_redis(settings.require_redis_url())
        self.events = EventPublisher(self.redis)
        self.inflight = InFlight(self.redis, self.owner)
        self.backend: SandboxBackend = build_backend(settings, owner=self.owner)
        # Every sandbox worker keeps its own containers and heartbeat: no cluster lock.
        # The janitor must outlive any one failed round.
        self._janitor = Periodic(
            "sandbox-janitor",
            min(settings.sandbox_janitor_interval_s, settings.sandbox_heartbeat_ttl_s / 3),
            self._janitor_round,
            failure="sandbox janitor round failed",
        )
        self._next_sweep = 0.0
        self._ready = False  # start() done: the worker takes execs from now on

    # -- worker lifecycle -------------------------------------------------
    def start(self) -> None:
        """Heartbeat, reap orphans of dead workers, warm the pool, start the janitor."""
        self.heartbeat()
        self.backend.reap_orphans(self.owner_alive)
        self.answer_orphans()
        self.backend.start()
        self._ready = True
        self.heartbeat()
        self._janitor.start()

    def close(self) -> None:
        self._janitor.stop()
        self.backend.close()
        self.redis.delete(keys.sandbox_heartbeat(self.owner))
        self.inflight.clear()
        self.engine.dispose()

    def heartbeat(self) -> None:
        """Say this worker lives; the value tells operators (and tests) whether it has
        finished starting and how many warm spares it holds."""
        ttl_ms = int(self.settings.sandbox_heartbeat_ttl_s * 1000)
        state = {
            "at": time.time(),
            "backend": self.backend.name,
            "ready": self._ready,
            "spares": self.backend.spares(),
        }
        self.redis.set(keys.sandbox_heartbeat(self.owner), json.dumps(state), px=ttl_ms)

    def owner_alive(self, owner: str) -> bool:
        return bool(self.redis.exists(keys.sandbox_heartbeat(owner)))

    def _janitor_round(self) -> None:
        self.heartbeat()
        self.backend.reap_orphans(self.owner_alive)
        self.answer_orphans()
        self.backend.maintain()
        if time.monotonic() >= self._next_sweep:
            self._next_sweep = time.monotonic() + self.settings.sandbox_workspace_sweep_s
            self.sweep_workspaces()
        self.heartbeat()  # again: maintain() may have taken a while, and added spares

    # -- workspaces of deleted sessions -------------------------------------
    def drop_workspace(self, session_id: str) -> bool:
        """The API's request after a session delete: remove its workspace (if deleted)."""
        return sweep.drop(
            self.sessions, self.settings.workspaces_dir, session_id, self.backend.forget
        )

    def sweep_workspaces(self) -> list[str]:
        """Remove workspaces whose session is deleted or unknown (a lost request, a crash)."""
        return sweep.sweep(
            self.sessions,
            self.settings.workspaces_dir,
            grace_s=self.settings.sandbox_workspace_orphan_grace_s,
            forget=self.backend.forget,
        )

    def answer_orphans(self) -> int:
        """Interrupt the execs of dead workers and answer their callers; returns how many."""
        answered = 0
        for owner, task_id, key in list(self.inflight.orphaned(self.owner_alive)):
            result = executions.interrupt(self.sessions, key=key, owner=owner)
            claimed = self.inflight.claim_orphan(owner, task_id)
            if claimed and result is not None and self.answer is not None:
                self.answer(task_id, result)
                answered += 1
                log.warning("exec %s of dead worker %s answered as interrupted", key, owner)
        return answered

    # -- one exec ---------------------------------------------------------
    def run(self, raw: dict[str, Any], *, task_id: str | None = None) -> dict[str, Any]:
        """Run one exec described by the task kwargs; always returns a result dict.

        ``task_id`` (the Celery task's) lets another worker answer the caller
        if this worker dies mid-run.
        """
        try:
            payload = ExecPayload.model_validate(raw)
        except ValidationError as exc:
            return error_result("invalid_request", str(exc))
        for value in (payload.session_id, payload.job_id):
            if value is not None and not SAFE_NAME.match(value):
                return error_result("invalid_request", f"unsafe identifier {value!r}")
        if payload.language == "bash" and (reason := refusal_reason(payload.code)):
            return {
                "status": "refused",
                "error": {"code": "dangerous_command", "message": f"refused: {reason}"},
            }
        timeout = min(
            payload.timeout_s or self.settings.sandbox_timeout_default_s,
            self.settings.sandbox_timeout_max_s,
        )
        key = executions.exec_key(payload.job_id, payload.tool_call_id)
        if task_id is not None:
            self.inflight.add(task_id, key)  # before the claim: a death after it is seen
        try:
            return self._claim_and_run(payload, key, timeout)
        finally:
            if task_id is not None:
                self.inflight.remove(task_id)

    def _claim_and_run(self, payload: ExecPayload, key: str, timeout: float) -> dict[str, Any]:
        owner = self.owners.of(payload.session_id, payload.job_id)
        # What the exec needs from Postgres is read in the claim's statement: one round trip.
        claim = executions.claim(
            self.sessions,
            key=key,
            job_id=payload.job_id,
            tool_call_id=payload.tool_call_id,
            owner=self.owner,
            run_for_s=timeout + CLAIM_GRACE_S,
            reads=(quota.sessions_read(owner), network_read(payload.project_id)),
        )
        if not claim.fresh:
            return {**(claim.result or {}), "replayed": True}
        sessions, allow_network = claim.reads
        try:
            result = self._execute(payload, timeout, owner, sessions, bool(allow_network))
        except SandboxUnavailable as exc:
            executions.release(self.sessions, key=key)
            return error_result(exc.code, str(exc))
        executions.finish(self.sessions, key=key, result=result)
        return result

    def _execute(
        self,
        payload: ExecPayload,
        timeout: float,
        owner: uuid.UUID | None,
        sessions: list[uuid.UUID],
        allow_network: bool,
    ) -> dict[str, Any]:
        workspace = self.workspace_for(payload)
        # One walk before the run serves the disk caps, the watchdog's baseline and the
        # artifact snapshot; one after it serves the after-check and the artifacts.
        before = workspace_scan.scan(workspace)
        allowed = quota.allowance(self.settings, workspace, sessions, here=before.total)
        refused = allowed.refusal()
        if refused is not None:
            return refused
        events: list[dict[str, Any]] = []

        def on_event(event_type: str, data: dict[str, Any]) -> None:
            data = {**data, "tool_call_id": payload.tool_call_id}
            events.append({"type": event_type, "data": data, "at": time.time()})
            if payload.job_id:
                self.events.publish(payload.job_id, event_type, data)

        argv = (
            ["python3", "-c", payload.code]
            if payload.language == "python"
            else ["bash", "-c", payload.code]
        )
        request = ExecRequest(
            argv=argv,
            workspace=workspace,
            timeout_s=timeout,
            session_key=workspace.name,
            allow_network=allow_network,
            disk_limit_bytes=allowed.limit,
            workspace_bytes=before.total,
        )
        outcome = self.backend.execute(request, on_event)
        disk, after = self._after_check(workspace, before, allowed, owner, outcome)
        found, skipped = artifacts.collect(
            workspace,
            before.artifacts,
            after=after.artifacts,
            max_bytes=self.settings.sandbox_artifact_max_bytes,
            max_count=self.settings.sandbox_artifact_max_count,
        )
        if payload.job_id and found:
            with transaction(self.sessions) as s:
                artifacts.store(s, payload.job_id, found)
        return {**self._result(outcome, found, skipped, events), "disk": disk}

    def _after_check(
        self,
        workspace: Path,
        before: workspace_scan.Scan,
        allowed: quota.DiskAllowance,
        owner: uuid.UUID | None,
        outcome: ExecOutcome,
    ) -> tuple[dict[str, int], workspace_scan.Scan]:
        """The disk caps after the run: the usage report, and the workspace as left."""
        after = workspace_scan.scan(workspace)
        if outcome.killed_reason is None and not workspace_scan.grown(before, after):
            # Nothing new or larger: nothing to take back, and this run cannot be what
            # carries its user past a cap. The report's other workspaces are as measured
            # before the run.
            return allowed.report(after.total), after
        # Measured again: the user's other workspaces may have grown meanwhile (their
        # own execs ran beside this one), and the total holds whichever finished last.
        sessions_now = quota.user_sessions(self.sessions, owner)
        now = quota.allowance(self.settings, workspace, sessions_now, here=after.total)
        disk, over = quota.enforce_after(
            workspace, before.sizes, now, outcome.killed_reason, measured=after.total
        )
        if over:
            # Its writes were taken back: the artifacts are what is left now.
            after = workspace_scan.scan(workspace)
            if outcome.killed_reason is None:
                # Finished between two polls, but past the limit: killed for disk all the same.
                outcome.killed_reason = quota.QUOTA_KILL
        return disk, after

    def _result(
        self,
        outcome: ExecOutcome,
        found: list[artifacts.FoundFile],
        skipped: list[dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> dict[str, Any]:
        status = "ok"
        if outcome.killed_reason == "timeout":
            status = "timeout"
        elif outcome.killed_reason:
            status = "killed"
        body = asdict(outcome)
        body.pop("details", None)
        return {
            **body,
            "status": status,
            "backend": self.backend.name,
            "artifacts": artifacts.describe(found),
            "artifacts_skipped": skipped,
            "events": events,
            "replayed": False,
        }

    def workspace_for(self, payload: ExecPayload) -> Path:
        """The session's workspace (the one the file tools use); a job's own without one."""
        name = payload.session_id or payload.job_id or f"scratch-{payload.tool_call_id}"
        if not SAFE_NAME.match(name):
            name = f"scratch-{uuid.uuid4().hex}"
        return self.settings.workspaces_dir / name


def network_read(project_id: str | None) -> ColumnElement[bool]:
    """Whether the project allows network, as one SQL value for the claim to read.

    Network is opt-in per project, read from Postgres at each exec (never from the
    caller, never cached): a project's change holds from its next exec on.
    """
    try:
        pid = uuid.UUID(project_id) if project_id else None
    except ValueError:
        pid = None
    if pid is None:
        return false()
    allowed = select(Project.allow_network).where(Project.id == pid).scalar_subquery()
    return func.coalesce(allowed, false())
