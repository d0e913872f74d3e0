"""The ``memory`` tool: read or replace one long-term memory document.

Replacement makes the effect IDEMPOTENT: a resumed job that writes again
leaves the same document. It touches only ``memory_documents`` rows of the
job's own user and project.

Each call re-checks the user's access first (``spine/membership.py``): a
user removed from the project, or disabled, reads and writes nothing. Project
memory reaches every member's prompt, so only a project owner (or an admin)
writes it directly; another member's write becomes a proposal that an owner
approves or rejects (``proposals.py``). Personal memory is the user's own.
"""

from __future__ import annotations

import uuid
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy.orm import Session

from services.common.db import transaction
from services.common.memory_writes import write_document
from services.worker.memory.documents import (
    MAX_MEMORY_CHARS,
    owner_of,
    read_documents,
    render_memory,
)
from services.worker.memory.proposals import propose
from services.worker.spine.membership import access_now
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult

MEMORY_TOOL = "memory"


class MemoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["read", "write"] = Field(description="read all documents, or write one.")
    scope: Literal["user", "project"] = Field(
        default="user", description="user: about this user; project: shared by the project."
    )
    kind: Literal["profile", "feedback", "notes"] = Field(
        default="notes", description="profile, feedback or notes."
    )
    content: str | None = Field(
        default=None,
        max_length=MAX_MEMORY_CHARS,
        description="For write: the complete new document (it replaces the old one).",
    )

    @model_validator(mode="after")
    def _write_has_content(self) -> MemoryArgs:
        if self.action == "write" and self.content is None:
            raise ValueError("write needs content (the whole new document)")
        return self


class MemoryTool(Tool[MemoryArgs]):
    name: ClassVar[str] = MEMORY_TOOL
    description: ClassVar[str] = (
        "Long-term memory that outlives this session: documents about the user (profile, "
        "feedback on how to work, notes) and about the project. read returns them all; "
        "write replaces one document with the full new text. Keep them short and factual."
    )
    args_model = MemoryArgs
    effect: ClassVar[ToolEffect] = ToolEffect.IDEMPOTENT
    retry_safe: ClassVar[bool] = True

    def run(self, args: MemoryArgs, ctx: ToolContext) -> ToolResult:
        if ctx.db is None:
            raise ToolError(
                "service_unavailable",
                "memory is unavailable: no database is configured",
                category="internal",
            )
        user_id = uuid.UUID(ctx.user_id)
        project_id = uuid.UUID(ctx.project_id) if ctx.project_id else None
        with transaction(ctx.db) as db:
            access = access_now(db, user_id=user_id, project_id=project_id)
            if access.revoked is not None:
                raise ToolError("access_revoked", access.revoked, category="security")
            if args.action == "read":
                docs = read_documents(db, user_id=user_id, project_id=project_id)
                text = render_memory(docs) or "(no memory documents yet)"
                return ToolResult(content=text, data={"documents": len(docs)})
            owner = owner_of(args.scope, user_id=user_id, project_id=project_id)
            if owner is None:
                raise ToolError(
                    "no_project",
                    "this session belongs to no project; write scope 'user' instead",
                    category="validation",
                )
            if args.scope == "project" and not access.owns_project:
                return self._propose(db, args, ctx, project_id=owner, user_id=user_id)
            write_document(
                db,
                scope=args.scope,
                owner_id=owner,
                kind=args.kind,
                content=args.content or "",
                job_id=uuid.UUID(ctx.job_id),
                author_id=user_id,
            )
        return ToolResult(
            content=f"memory {args.scope}/{args.kind} saved ({len(args.content or '')} chars)",
            data={"scope": args.scope, "kind": args.kind, "action": "write"},
        )

    def _propose(
        self,
        db: Session,
        args: MemoryArgs,
        ctx: ToolContext,
        *,
        project_id: uuid.UUID,
        user_id: uuid.UUID,
    ) -> ToolResult:
        proposal = propose(
            db,
            project_id=project_id,
            kind=args.kind,
            content=args.content or "",
            user_id=user_id,
            job_id=uuid.UUID(ctx.job_id),
            step_key=ctx.step_key,
        )
        ctx.emit("memory_proposal", {"proposal_id": str(proposal), "kind": args.kind})
        return ToolResult(
            content=(
                f"not saved yet: project/{args.kind} is shared by every member, so this "
                f"write waits for a project owner's approval (proposal {proposal}); until "
                "then project memory is unchanged"
            ),
            data={
                "scope": "project",
                "kind": args.kind,
                "action": "write",
                "status": "pending_review",
                "proposal_id": str(proposal),
            },
        )


def memory_tool() -> MemoryTool:
    return MemoryTool()
