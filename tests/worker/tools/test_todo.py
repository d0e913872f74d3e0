"""The todo tool against a real session row in PostgreSQL."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import transaction
from services.common.models.conversations import ChatSession
from services.common.models.users import User
from services.worker.tools.base import ToolContext, ToolError, ToolResult
from services.worker.tools.todo import (
    MAX_TODO_ITEMS,
    todo_reminder,
    todo_reminder_due,
    todo_tool,
)

TOOL = todo_tool()
PLAN = [
    {"content": "Find papers on sparse attention", "status": "completed"},
    {"content": "Read the top three", "status": "in_progress"},
    {"content": "Write the summary", "status": "pending"},
]


def make_session(factory: sessionmaker[Session], unique: str) -> tuple[str, str]:
    with transaction(factory) as db:
        user = User(email=f"todo-{unique}@example.org")
        db.add(user)
        db.flush()
        chat = ChatSession(user_id=user.id, title="todo test")
        db.add(chat)
        db.flush()
        return str(user.id), str(chat.id)


def stored_todos(factory: sessionmaker[Session], session_id: str) -> list[dict[str, Any]]:
    with transaction(factory) as db:
        row = db.get(ChatSession, uuid.UUID(session_id))
        assert row is not None
        return list(row.todos)


@pytest.fixture
def session_ctx(
    ctx: ToolContext, session_factory: sessionmaker[Session], unique: str
) -> ToolContext:
    user_id, session_id = make_session(session_factory, unique)
    return dataclasses.replace(
        ctx,
        user_id=user_id,
        session_id=session_id,
        db=session_factory,
    )


def call(ctx: ToolContext, items: Any) -> ToolResult:
    return TOOL.run(TOOL.parse({"items": items}), ctx)


class TestTodoPersisted:
    def test_saves_to_session_and_streams(
        self, session_ctx: ToolContext, session_factory: sessionmaker[Session], events: list
    ) -> None:
        result = call(session_ctx, PLAN)
        assert result.content == "3 items: 1 completed, 1 in progress, 1 pending"
        assert stored_todos(session_factory, str(session_ctx.session_id)) == PLAN
        assert events == [("todo", {"items": PLAN})]

    def test_full_replacement_and_idempotent(
        self, session_ctx: ToolContext, session_factory: sessionmaker[Session]
    ) -> None:
        call(session_ctx, PLAN)
        done = [{**item, "status": "completed"} for item in PLAN]
        call(session_ctx, done)
        call(session_ctx, done)  # a re-run after a crash changes nothing
        assert stored_todos(session_factory, str(session_ctx.session_id)) == done
        assert call(session_ctx, []).content == "0 items: the todo list is empty"
        assert stored_todos(session_factory, str(session_ctx.session_id)) == []

    @pytest.mark.parametrize(
        "items",
        [
            [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}],
            [{"content": f"step {i}", "status": "pending"} for i in range(MAX_TODO_ITEMS + 1)],
            [{"content": "a", "status": "done"}],
            [{"content": "   ", "status": "pending"}],
            [{"content": "a"}],
            [{"content": "a", "status": "pending", "priority": "high"}],
            "not a list",
            None,
        ],
    )
    def test_violations_fail_before_anything_is_saved(
        self,
        session_ctx: ToolContext,
        session_factory: sessionmaker[Session],
        events: list,
        items: Any,
    ) -> None:
        call(session_ctx, PLAN)
        events.clear()
        with pytest.raises(ToolError) as err:
            call(session_ctx, items)
        assert err.value.code == "invalid_arguments"
        assert stored_todos(session_factory, str(session_ctx.session_id)) == PLAN
        assert events == []

    def test_someone_elses_session_is_refused(
        self, session_ctx: ToolContext, session_factory: sessionmaker[Session], unique: str
    ) -> None:
        _, other_session = make_session(session_factory, unique + "x")
        hostile = dataclasses.replace(session_ctx, session_id=other_session)
        with pytest.raises(ToolError) as err:
            call(hostile, PLAN)
        assert err.value.code == "session_not_found"
        assert stored_todos(session_factory, other_session) == []

    def test_a_deleted_session_is_refused(
        self, session_ctx: ToolContext, session_factory: sessionmaker[Session]
    ) -> None:
        call(session_ctx, PLAN)
        assert session_ctx.session_id is not None
        with transaction(session_factory) as db:
            row = db.get(ChatSession, uuid.UUID(session_ctx.session_id))
            assert row is not None
            row.deleted_at = datetime.now(UTC)
        with pytest.raises(ToolError) as err:
            call(session_ctx, [])
        assert err.value.code == "session_not_found"
        assert stored_todos(session_factory, session_ctx.session_id) == PLAN

    def test_missing_factory_is_a_clear_error(self, session_ctx: ToolContext) -> None:
        with pytest.raises(ToolError) as err:
            call(dataclasses.replace(session_ctx, db=None), PLAN)
        assert err.value.code == "service_unavailable"


class TestTodoWithoutSession:
    def test_kept_in_result_only(self, ctx: ToolContext, events: list) -> None:
        result = call(ctx, PLAN[:1])
        assert result.content == "1 item: 1 completed"
        assert result.data == {"items": PLAN[:1], "persisted": False}
        assert events == [("todo", {"items": PLAN[:1]})]


class TestReminder:
    def test_due_after_three_rounds(self) -> None:
        assert [todo_reminder_due(n) for n in range(5)] == [False, False, False, True, True]
        with pytest.raises(ValueError):
            todo_reminder_due(-1)

    def test_text_shows_current_list(self) -> None:
        text = todo_reminder(PLAN)
        assert "todo" in text and "[in_progress] Read the top three" in text
        assert "no todo list yet" in todo_reminder([])

    def test_schema_the_model_sees(self) -> None:
        schema = TOOL.openai_schema()["function"]
        items = schema["parameters"]["properties"]["items"]
        assert schema["name"] == "todo"
        assert items["maxItems"] == MAX_TODO_ITEMS
