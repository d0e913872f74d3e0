"""The todo tool: the model's visible plan, replaced as a whole on every call.

Full-list replacement makes the effect IDEMPOTENT: running the same call twice
after a crash leaves the same list. The list lives on the session row so the
UI, the CLI's ``/todos`` and later turns see it; it is streamed as a ``todo``
event after it is committed.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import Engine, text

from services.common.one_statement import OneStatement
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult

MAX_TODO_ITEMS = 20
MAX_TODO_CHARS = 500
REMINDER_AFTER_ROUNDS = 3
STATUS_ORDER = ("completed", "in_progress", "pending")

TodoStatus = Literal["pending", "in_progress", "completed"]

# One autocommitted statement (was a transaction of a locking read and an update:
# four round trips and the ORM's unit of work per call). The UPDATE takes the row
# lock itself, so two concurrent todo calls on one session still serialize and the
# last full list wins, as replacement semantics promise; only the session's owner,
# and only while it is not deleted, matches a row.
_SAVE = OneStatement(
    text(
        """
        UPDATE sessions SET todos = CAST(:items AS jsonb)
         WHERE id = :session_id AND user_id = :user_id AND deleted_at IS NULL
        RETURNING id
        """
    )
)


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1,
        max_length=MAX_TODO_CHARS,
        description="What to do, as a short imperative sentence.",
    )
    status: TodoStatus = Field(description="pending, in_progress or completed.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("content must not be blank")
        return value


class TodoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[TodoItem] = Field(
        max_length=MAX_TODO_ITEMS,
        description=f"The complete, updated todo list (replaces the previous one; at most "
        f"{MAX_TODO_ITEMS} items, at most one in_progress). Send [] to clear it.",
    )

    @model_validator(mode="after")
    def _one_in_progress(self) -> TodoArgs:
        working = sum(1 for item in self.items if item.status == "in_progress")
        if working > 1:
            raise ValueError(f"{working} items are in_progress; at most one may be")
        return self


def summarize(items: list[dict[str, Any]]) -> str:
    """'3 items: 1 completed, 1 in progress, 1 pending' (zero counts left out)."""
    if not items:
        return "0 items: the todo list is empty"
    counts = Counter(str(item["status"]) for item in items)
    parts = [
        f"{counts[status]} {status.replace('_', ' ')}" for status in STATUS_ORDER if counts[status]
    ]
    noun = "item" if len(items) == 1 else "items"
    return f"{len(items)} {noun}: " + ", ".join(parts)


def todo_reminder_due(rounds_since_update: int) -> bool:
    """Whether the runtime should remind the model to update its todo list.

    True once ``REMINDER_AFTER_ROUNDS`` tool rounds have passed without a todo
    call; the runtime resets its counter on a todo call (and may reset it when
    it injects the reminder, so the reminder repeats every few rounds).
    """
    if rounds_since_update < 0:
        raise ValueError("rounds_since_update must be >= 0")
    return rounds_since_update >= REMINDER_AFTER_ROUNDS


def todo_reminder(items: list[dict[str, Any]]) -> str:
    """The reminder text the runtime injects, showing the list as it stands."""
    head = (
        f"Reminder: {REMINDER_AFTER_ROUNDS} or more tool rounds have passed without a todo "
        "update. If your plan or progress changed, call the todo tool with the full updated "
        "list (mark finished items completed, keep exactly one in_progress while working)."
    )
    if not items:
        return head + " You have no todo list yet; create one if the task has several steps."
    lines = [f"- [{item['status']}] {item['content']}" for item in items]
    return head + " Current list:\n" + "\n".join(lines)


class TodoTool(Tool[TodoArgs]):
    name: ClassVar[str] = "todo"
    description: ClassVar[str] = (
        "Replace your todo list for this task with the full updated list. Use it for "
        "multi-step work: keep one item in_progress, mark items completed as soon as they "
        "are done. The user sees the list live."
    )
    args_model = TodoArgs
    effect: ClassVar[ToolEffect] = ToolEffect.IDEMPOTENT
    retry_safe: ClassVar[bool] = True

    def run(self, args: TodoArgs, ctx: ToolContext) -> ToolResult:
        items = [item.model_dump() for item in args.items]
        persisted = False
        if ctx.session_id is not None:
            self._persist(ctx, items)
            persisted = True
        # Emitted only after the commit, so a watcher never sees a list that a
        # failed transaction then took back.
        ctx.emit("todo", {"items": items})
        return ToolResult(content=summarize(items), data={"items": items, "persisted": persisted})

    def _persist(self, ctx: ToolContext, items: list[dict[str, Any]]) -> None:
        factory = ctx.db
        if factory is None:
            raise ToolError(
                "service_unavailable",
                "the todo list cannot be saved: no database session factory is configured",
                category="internal",
                retryable=False,
            )
        session_id = _as_uuid(ctx.session_id, "session")
        user_id = _as_uuid(ctx.user_id, "user")
        engine = factory.kw.get("bind")
        assert isinstance(engine, Engine), "the worker's session factory is bound to its engine"
        params = {"items": json.dumps(items), "session_id": session_id, "user_id": user_id}
        if _SAVE.one(engine, params) is None:
            raise ToolError(
                "session_not_found",
                f"session {session_id} was not found for this user; the todo list was not saved",
                category="internal",
            )


def _as_uuid(value: str | None, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ToolError(
            "session_not_found",
            f"the job's {what} id {value!r} is not valid",
            category="internal",
        ) from None


def todo_tool() -> TodoTool:
    """The todo tool instance for the runtime's ToolRegistry."""
    return TodoTool()
