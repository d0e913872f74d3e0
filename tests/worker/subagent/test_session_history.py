"""``session_history``: search and page this session's persisted messages, and only those."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Job, Message
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.session_history import SessionHistoryArgs, SessionHistoryTool
from services.worker.toolset import build_registry
from tests.fixtures.builders import make_user

TOOL = SessionHistoryTool()


def _session(factory: sessionmaker[Session], texts: list[tuple[str, str]]) -> tuple[str, str]:
    """A session of the given (role, content) messages; returns (user id, session id)."""
    user = make_user(factory)
    with factory() as db, db.begin():
        session = ChatSession(user_id=user.id, title="history")
        db.add(session)
        db.flush()
        job = Job(user_id=user.id, session_id=session.id, kind="turn", input={})
        db.add(job)
        db.flush()
        for seq, (role, content) in enumerate(texts, start=1):
            db.add(
                Message(session_id=session.id, job_id=job.id, seq=seq, role=role, content=content)
            )
        session.message_seq = len(texts)
        return str(user.id), str(session.id)


def _ctx(factory: sessionmaker[Session], user_id: str, session_id: str, tmp: Path) -> ToolContext:
    return ToolContext(
        job_id=str(uuid.uuid4()),
        session_id=session_id,
        user_id=user_id,
        project_id=None,
        workspace=tmp,
        tool_call_id="call-1",
        step_key="tool:0:call-1",
        emit=lambda *_: None,
        db=factory,
    )


def _run(ctx: ToolContext, **args: object) -> str:
    return TOOL.run(TOOL.parse(dict(args)), ctx).content


class TestSessionHistory:
    def test_search_is_case_insensitive_and_literal(
        self, session_factory: sessionmaker[Session], tmp_path: Path
    ) -> None:
        user_id, session_id = _session(
            session_factory,
            [
                ("user", "What is the Kalman gain?"),
                ("assistant", "The kalman gain weighs the measurement."),
                ("user", "Plot 100% of the data_set"),
            ],
        )
        ctx = _ctx(session_factory, user_id, session_id, tmp_path)
        found = _run(ctx, query="KALMAN")
        assert "of 2 matching" in found and "#1 user" in found and "#2 assistant" in found
        # % and _ are text, not wildcards.
        assert "of 1 matching" in _run(ctx, query="100%")
        assert "no messages matching" in _run(ctx, query="data%set")

    def test_paging_and_reading_one_message_in_full(
        self, session_factory: sessionmaker[Session], tmp_path: Path
    ) -> None:
        long_text = "start " + "x" * 1000 + " end"
        texts = [("user", f"message {i}") for i in range(5)] + [("assistant", long_text)]
        user_id, session_id = _session(session_factory, texts)
        ctx = _ctx(session_factory, user_id, session_id, tmp_path)
        page = TOOL.run(TOOL.parse({"offset": 2, "limit": 2}), ctx)
        assert "messages 3–4 of 6" in page.content and "(more: offset=4)" in page.content
        assert "message 2" in page.content and "message 4" not in page.content
        last = TOOL.run(TOOL.parse({"offset": 5}), ctx)
        assert "…" in last.content and " end" not in last.content  # previews are short
        full = _run(ctx, message_id=last.data["ids"][0])
        assert full.endswith(" end") and "#6 assistant" in full

    def test_another_users_session_and_foreign_message_ids_are_refused(
        self, session_factory: sessionmaker[Session], tmp_path: Path
    ) -> None:
        _, theirs = _session(session_factory, [("user", "secret plan")])
        mine_user, mine = _session(session_factory, [("user", "my note")])
        with pytest.raises(ToolError) as refused:
            _run(_ctx(session_factory, mine_user, theirs, tmp_path), query="secret")
        assert refused.value.code == "no_session"
        # A message id from the other session is not found through mine either.
        their_ids = TOOL.run(
            SessionHistoryArgs(),
            _ctx(session_factory, _owner(session_factory, theirs), theirs, tmp_path),
        ).data["ids"]
        with pytest.raises(ToolError) as missing:
            _run(_ctx(session_factory, mine_user, mine, tmp_path), message_id=their_ids[0])
        assert missing.value.code == "message_not_found"

    def test_it_is_offered_with_the_agent_tool(self) -> None:
        names = build_registry().names()
        assert "session_history" in names and "agent" in names


def _owner(factory: sessionmaker[Session], session_id: str) -> str:
    with factory() as db:
        session = db.get(ChatSession, uuid.UUID(session_id))
        assert session is not None
        return str(session.user_id)
