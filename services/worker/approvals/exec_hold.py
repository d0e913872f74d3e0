"""A bash/python call in ``protected`` mode: its changes to protected files wait for a human.

Whether code will write ``Makefile`` cannot be told from its text, so the call
runs, and what it did to protected paths is held afterwards, like a write:

1. Before it runs, the protected files are copied into the call's stash
   (``<workspaces>/.held/<job>/<step>``, outside every workspace; see
   ``snapshot.py``). Too many or too large to copy: the call itself waits for
   approval first, as in ``strict`` mode (a ``command`` approval with a note).
2. After it, every changed protected path is put back as it was (content,
   mode, mtime) and its new state kept in the stash. Nothing changed: the
   result goes to the model as usual and the stash is dropped.
3. Something changed: an ``exec_changes`` approval is inserted (keyed by job
   and step key, like a write's), listing the command, its output and each
   path's diff; the job waits as ``waiting_approval``. The ledger step stays
   ``running``: the command has run, only its protected changes are pending.
4. The decision wakes the job; the step's resume (``resume``) reads the
   approval: ``apply`` re-checks that each path is still as restored and puts
   the new state back (a path changed meanwhile fails the approval, nothing
   is applied); ``reject``/``request_changes`` keep the originals. The model
   reads the command's output and what happened to the protected files.

A worker killed between 1 and 3 leaves a stash and no approval: the resume
puts the protected files back from the stash and reports the call interrupted.
A failed call (timeout, kill) has its protected changes reverted, not held.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from services.common.models import Approval
from services.worker.approvals.policy import Proposal
from services.worker.approvals.snapshot import Change, Stash, TooMuchToHold, scan
from services.worker.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from services.worker.approvals.gate import ApprovalGate

HOLD_KIND = "exec_changes"
MAX_SHOWN_CHARS = 20_000


def stash_for(gate: ApprovalGate, ctx: ToolContext) -> Stash:
    step = hashlib.sha256(ctx.step_key.encode()).hexdigest()[:24]
    held = gate.deps.settings.workspaces_dir / ".held" / ctx.job_id / step
    return Stash(held, ctx.workspace)


def command_of(args: BaseModel) -> str:
    return str(getattr(args, "command", None) or getattr(args, "code", None) or "")


def _after(gate: ApprovalGate, stash: Stash, ctx: ToolContext) -> tuple[list[Change], list[str]]:
    """Compare, and put every changed protected path back; (changes, not restorable)."""
    settings = gate.deps.settings
    try:
        after = scan(ctx.workspace, gate.protected, max_entries=settings.approval_scan_max_entries)
    except TooMuchToHold:
        # The call grew the workspace past the walk's bound: check the known ones.
        after = {p: e for p in stash.before() if (e := stash.state_of(p)) is not None}
    changes = stash.compare(after, max_bytes=int(settings.approval_hold_max_mb * 1024**2))
    return changes, stash.restore([c.path for c in changes])


def _listing(paths: list[str]) -> str:
    return ", ".join(paths[:20]) + (f" and {len(paths) - 20} more" if len(paths) > 20 else "")


class ExecHold:
    """The protected files of one sandbox call, copied aside before it runs."""

    def __init__(
        self, gate: ApprovalGate, tool: Tool, args: BaseModel, ctx: ToolContext, stash: Stash
    ) -> None:
        self.gate, self.tool, self.args, self.ctx, self.stash = gate, tool, args, ctx, stash

    @classmethod
    def begin(cls, gate: ApprovalGate, tool: Tool, args: BaseModel, ctx: ToolContext) -> ExecHold:
        """Copy the protected files aside; raises TooMuchToHold past the bounds."""
        settings = gate.deps.settings
        entries = scan(
            ctx.workspace, gate.protected, max_entries=settings.approval_scan_max_entries
        )
        stash = stash_for(gate, ctx)
        stash.take(
            entries,
            max_files=settings.approval_hold_max_files,
            max_bytes=int(settings.approval_hold_max_mb * 1024**2),
        )
        return cls(gate, tool, args, ctx, stash)

    def after_failure(self, err: ToolError) -> ToolError:
        changes, stuck = _after(self.gate, self.stash, self.ctx)
        self.stash.discard()
        reverted = [c.path for c in changes if c.path not in stuck]
        if not changes:
            return err
        note = f"\n[changes it made to protected files were reverted: {_listing(reverted)}]"
        if stuck:
            note += f"\n[could not be reverted: {_listing(stuck)}]"
        return ToolError(err.code, err.message + note, category=err.category, details=err.details)

    def after_success(self, result: ToolResult) -> ToolResult:
        """The result when no protected path changed; else raises StepSuspended."""
        changes, stuck = _after(self.gate, self.stash, self.ctx)
        held = [c for c in changes if c.held and c.path not in stuck]
        if not held:
            self.stash.discard()
            if not changes:
                return result
            return ToolResult(result.content + _not_kept(changes, stuck), result.data)
        entries: list[dict[str, Any]] = [
            {
                "tool": self.tool.name,
                "command": command_of(self.args)[:MAX_SHOWN_CHARS],
                "output": result.content[:MAX_SHOWN_CHARS],
            }
        ]
        entries += [
            {
                "path": c.path,
                "tool": self.tool.name,
                "change": c.change,
                "held": c.held and c.path not in stuck,
                "diff": c.diff,
            }
            for c in changes
        ]
        baselines = {c.path: c.before.sha256 if c.before else None for c in held}
        self.gate.request(
            self.tool.name, Proposal(kind=HOLD_KIND, diffs=entries, baselines=baselines), self.ctx
        )
        raise AssertionError("unreachable: request() always suspends")


def _not_kept(changes: list[Change], stuck: list[str]) -> str:
    lost = [c.path for c in changes if not c.held and c.path not in stuck]
    note = ""
    if lost:
        note += f"\n[too large to hold for approval, so reverted: {_listing(lost)}]"
    if stuck:
        note += f"\n[protected files that could not be reverted: {_listing(stuck)}]"
    return note


def _apply(stash: Stash) -> list[str]:
    """Put each held path into its approved state; the paths that changed since
    (nothing is applied then). A path already in its new state is left alone."""
    before = stash.before()
    todo = []
    conflicts = []
    for path, new, held, blob in stash.changes():
        if not held:
            continue
        now = stash.state_of(path)
        old = before.get(path)
        if (new is None and now is None) or (new is not None and new.same_content(now)):
            continue  # applied by an earlier attempt that stopped part-way
        if (old is None and now is None) or (old is not None and old.same_content(now)):
            todo.append((path, new, blob))
        else:
            conflicts.append(path)
    if not conflicts:
        for path, new, blob in todo:
            stash.put(path, new, blob)
    return conflicts


def resume(
    gate: ApprovalGate, ctx: ToolContext, approval: Approval | None
) -> ToolResult | ToolError:
    """The outcome of a sandbox step that was running when its slice ended."""
    stash = stash_for(gate, ctx)
    if approval is None or approval.kind != HOLD_KIND:
        message = (
            "this execution was interrupted by a worker restart and was not repeated; "
            "run it again if you still need its result"
        )
        if stash.taken():
            changes, stuck = _after(gate, stash, ctx)
            reverted = [c.path for c in changes if c.path not in stuck]
            if reverted:
                message += f"; its changes to protected files were reverted: {_listing(reverted)}"
            stash.discard()
        return ToolError("interrupted", message, category="interrupted")
    if approval.status == "pending":
        gate.wait_again(approval)
    output = str(next((d.get("output", "") for d in approval.diffs if "command" in d), ""))
    held = [str(d["path"]) for d in approval.diffs if d.get("held")]
    data = {"approval_id": str(approval.id), "protected_changes": held}
    if approval.status == "approved":
        if not stash.taken():
            message = "the held changes are gone from the worker's stash; nothing was applied"
            gate.fail(approval, message, ctx)
            return ToolResult(f"{output}\n[{message}]", data)
        conflicts = _apply(stash)
        if conflicts:
            message = f"not applied: {_listing(conflicts)} changed after the approval was requested"
            gate.fail(approval, message, ctx)
            stash.discard()
            return ToolResult(
                f"{output}\n[{message}; the protected files were left as they are]", data
            )
        gate.applied(approval.id)
        approval.status = "applied"
    stash.discard()
    if approval.status == "applied":
        note = f"the user approved the changes to protected files; they are kept: {_listing(held)}"
    elif approval.status in ("rejected", "changes_requested"):
        feedback = (approval.feedback or "").strip()
        verb = (
            "rejected" if approval.status == "rejected" else "did not keep (asked for changes to)"
        )
        note = (
            f"the user {verb} the changes to protected files; they were reverted: {_listing(held)}"
        )
        if feedback:
            note += f"; feedback: {feedback}"
    else:
        note = f"the changes to protected files were not kept ({approval.error or approval.status})"
    return ToolResult(f"{output}\n[{note}]", data)
