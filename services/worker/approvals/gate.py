"""The approval gate in front of a gated tool call.

A call that needs approval (see ``policy.py``) is not run: its approval row
(keyed by job and step key) is inserted in the transaction that sets the job
``waiting_approval`` and gives the lease up, and the slice ends. The decision
route wakes the job; the resumed call finds its row and acts on the decision:

- ``approved``: every file's baseline hash is re-checked first; if a file
  changed meanwhile the approval fails cleanly (status ``failed``, the model
  told why) and nothing is written; else the call runs through the normal
  exactly-once path and the approval becomes ``applied``.
- ``changes_requested`` / ``rejected``: the call does not run; the model reads
  the decision (and the feedback) as the tool result.

A kill -9 at any point loses nothing: before the commit nothing was asked,
after it the row and the status are there for any worker and any restart.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert

from services.common.contracts.statuses import JobStatus
from services.common.failpoints import failpoint
from services.common.models import Approval, Project
from services.worker.approvals import exec_hold
from services.worker.approvals.exec_hold import ExecHold
from services.worker.approvals.policy import Proposal, proposal_for
from services.worker.approvals.protected import ProtectedPaths
from services.worker.approvals.snapshot import TooMuchToHold
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.events import JobEvents
from services.worker.spine.lease import Lease
from services.worker.spine.suspend import StepSuspended, suspend_job
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.workspace import relative, resolve, sha256_file

MARK_SQL = text(
    """
    UPDATE approvals SET status = :status, error = :error, resolved_at = now()
     WHERE id = :id AND EXISTS (SELECT 1 FROM jobs WHERE id = :job_id AND fence = :fence)
    """
)


class ApprovalGate:
    """Decides, for one job under its lease, whether a tool call may run now."""

    def __init__(
        self,
        deps: RuntimeDeps,
        lease: Lease,
        *,
        project_id: uuid.UUID | None,
        events: JobEvents,
    ) -> None:
        self.deps = deps
        self.lease = lease
        self.project_id = project_id
        self.events = events
        self._mode: str | None = None
        settings = deps.settings
        self.protected = ProtectedPaths.of(
            settings.approval_protected_suffixes, settings.approval_protected_paths
        )

    def mode(self) -> str:
        if self._mode is None:
            mode = None
            if self.project_id is not None:
                with self.deps.factory() as db:
                    mode = db.scalar(
                        select(Project.approval_mode).where(Project.id == self.project_id)
                    )
            self._mode = mode or self.deps.settings.approval_mode
        return self._mode

    def check(self, *, tool: Tool, args: BaseModel, ctx: ToolContext) -> uuid.UUID | None:
        """None: no approval involved. An id: approved and the baseline holds — run it.

        Raises :class:`StepSuspended` while a human decides, and ``ToolError`` when
        the decision (or a changed baseline) means the call must not run.
        """
        if not self._may_need_approval(tool, args, ctx):
            return None
        approval = self.find(ctx.step_key)
        if approval is None:
            if tool.effect is ToolEffect.SANDBOX and self.mode() == "protected":
                return None  # it runs; its protected changes are held after (hold_for)
            self._request(tool, args, ctx)
            return None  # unreachable: _request always raises
        return self._decided(approval, ctx)

    def find(self, step_key: str) -> Approval | None:
        with self.deps.factory() as db:
            approval = db.scalar(
                select(Approval).where(
                    Approval.job_id == self.lease.job_id, Approval.step_key == step_key
                )
            )
            if approval is not None:
                db.expunge(approval)
        return approval

    def hold_for(
        self, tool: Tool, args: BaseModel, ctx: ToolContext, approval: uuid.UUID | None
    ) -> ExecHold | None:
        """For a sandbox call in ``protected`` mode not approved beforehand: its
        protected files copied aside (see exec_hold.py). When they are too many to
        copy, the call itself waits for approval first (raises StepSuspended)."""
        if tool.effect is not ToolEffect.SANDBOX or approval is not None:
            return None
        if self.mode() != "protected":
            return None
        try:
            return ExecHold.begin(self, tool, args, ctx)
        except TooMuchToHold as exc:
            note = (
                f"this command needs approval before it runs: {exc}, too many to hold "
                "its changes to protected files for review afterwards"
            )
            entry = {"tool": tool.name, "command": exec_hold.command_of(args)[:20_000]}
            proposal = Proposal(kind="command", diffs=[{**entry, "note": note}], baselines={})
            self.request(tool.name, proposal, ctx)
            return None  # unreachable

    def resume_exec(self, ctx: ToolContext) -> ToolResult | ToolError:
        """A sandbox step found running on resume: its held changes' decision, or
        interrupted (with any protected changes put back)."""
        return exec_hold.resume(self, ctx, self.find(ctx.step_key))

    def wait_again(self, approval: Approval) -> None:
        # Woken without a decision (a stray message): wait again.
        with self.deps.factory() as db, db.begin():
            suspend_job(db, self.lease, status=JobStatus.WAITING_APPROVAL)
        raise StepSuspended(f"waiting for approval {approval.id}")

    def fail(self, approval: Approval, message: str, ctx: ToolContext) -> None:
        self._mark(approval.id, "failed", message)
        self._emit(approval.id, "failed", approval.tool_name, ctx, None, error=message)

    def applied(self, approval_id: uuid.UUID) -> None:
        self._mark(approval_id, "applied", None)

    def _may_need_approval(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> bool:
        if tool.approval_required:
            return True
        if tool.effect is ToolEffect.SANDBOX:
            return self.mode() in ("strict", "protected")
        if tool.effect is not ToolEffect.WORKSPACE_EDIT or self.mode() == "off":
            return False
        path = str(getattr(args, "path", ""))
        try:
            shown = relative(ctx.workspace, resolve(ctx.workspace, path, create_root=True))
        except ToolError:
            return False  # the tool itself refuses the path, with its own message
        return self.protected.match(shown)

    def _request(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> None:
        intent = tool.intent(args, ctx) if tool.effect is ToolEffect.WORKSPACE_EDIT else None
        proposal = proposal_for(
            mode=self.mode(),
            protected=self.protected,
            tool=tool,
            arguments=args.model_dump(mode="json"),
            intent=intent,
        )
        assert proposal is not None
        self.request(tool.name, proposal, ctx)

    def request(self, tool_name: str, proposal: Proposal, ctx: ToolContext) -> None:
        """Insert the approval row with the job's suspension, tell the watcher, suspend."""
        with self.deps.factory() as db, db.begin():
            suspend_job(db, self.lease, status=JobStatus.WAITING_APPROVAL)
            approval_id = db.scalar(
                insert(Approval)
                .values(
                    id=uuid.uuid4(),
                    job_id=self.lease.job_id,
                    step_key=ctx.step_key,
                    tool_name=tool_name,
                    kind=proposal.kind,
                    diffs=proposal.diffs,
                    baselines=proposal.baselines,
                    status="pending",
                )
                .on_conflict_do_update(
                    constraint="uq_approvals_job_step", set_={"status": "pending"}
                )
                .returning(Approval.id)
            )
        failpoint("approval.after_request")
        assert approval_id is not None
        self._emit(approval_id, "pending", tool_name, ctx, proposal)
        self.events.emit("status", {"status": JobStatus.WAITING_APPROVAL})
        raise StepSuspended(f"waiting for approval {approval_id}")

    def _decided(self, approval: Approval, ctx: ToolContext) -> uuid.UUID | None:
        status = approval.status
        if status == "pending":
            self.wait_again(approval)
        if status in ("approved", "applied"):
            changed = _changed_files(approval.baselines, ctx)
            if changed and status == "approved":
                message = (
                    f"not applied: {', '.join(changed)} changed after the approval was "
                    "requested; read the file again and propose the change anew"
                )
                self.fail(approval, message, ctx)
                raise ToolError(
                    "approval_baseline_changed",
                    message,
                    details={"approval_id": str(approval.id), "changed": changed},
                )
            return approval.id
        feedback = (approval.feedback or "").strip()
        if status == "changes_requested":
            raise ToolError(
                "changes_requested",
                "the user did not apply this and asked for changes: "
                + (feedback or "(no feedback given)"),
                details={"approval_id": str(approval.id)},
            )
        if status == "rejected":
            reason = f": {feedback}" if feedback else ""
            raise ToolError(
                "rejected",
                f"the user rejected this change; it was not applied{reason}",
                details={"approval_id": str(approval.id)},
            )
        raise ToolError(
            "approval_failed",
            approval.error or f"the approval ended as {status}",
            details={"approval_id": str(approval.id)},
        )

    def _mark(self, approval_id: uuid.UUID, status: str, error: str | None) -> None:
        with self.deps.factory() as db, db.begin():
            db.execute(
                MARK_SQL,
                {
                    "status": status,
                    "error": error,
                    "id": approval_id,
                    "job_id": self.lease.job_id,
                    "fence": self.lease.fence,
                },
            )

    def _emit(
        self,
        approval_id: uuid.UUID,
        status: str,
        tool_name: str,
        ctx: ToolContext,
        proposal: Proposal | None,
        *,
        error: str | None = None,
    ) -> None:
        data: dict[str, Any] = {
            "approval_id": str(approval_id),
            "status": status,
            "tool": tool_name,
            "tool_call_id": ctx.tool_call_id,
        }
        if proposal is not None:
            data["kind"] = proposal.kind
            data["files"] = [d["path"] for d in proposal.diffs if "path" in d]
        if error:
            data["error"] = error
        self.events.emit("approval", data)


def _changed_files(baselines: dict[str, str | None], ctx: ToolContext) -> list[str]:
    changed = []
    for path, baseline in baselines.items():
        try:
            current = sha256_file(resolve(ctx.workspace, path))
        except ToolError:
            current = "(unreachable)"
        if current != baseline:
            changed.append(path)
    return changed
