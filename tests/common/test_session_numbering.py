"""A job that opens its own session numbers that session's messages from 1, in order.

The opening message's seq is handed out in the session's INSERT
(``turns.create_job_in_new_session``), not by a separate ``UPDATE … RETURNING``; what a reader of
the session sees must not change: the user's message is 1 and the next one (the
worker's reply) is 2.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.message_seq import next_message_seq
from services.common.models import ChatSession, Message
from services.common.turns import JobOrigin, create_job_in_new_session, open_session
from tests.fixtures.builders import make_user


class TestAJobOpeningItsSession:
    def test_first_message_is_one_and_the_next_is_two(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        origin = JobOrigin(user_id=user.id)
        with session_factory() as db, db.begin():
            job = create_job_in_new_session(
                db,
                origin=origin,
                title="t",
                kind="turn",
                job_input={"content": "hello"},
                max_turns=3,
                first_message="hello",
            )
            session_id = job.session_id
            assert session_id is not None
        with session_factory() as db, db.begin():
            seqs = db.execute(
                select(Message.seq, Message.role, Message.job_id).where(
                    Message.session_id == session_id
                )
            ).all()
            assert [(s, r, j) for s, r, j in seqs] == [(1, "user", job.id)]
            assert next_message_seq(db, session_id) == 2

    def test_a_job_whose_session_opens_without_a_message_starts_at_one(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        with session_factory() as db, db.begin():
            job = create_job_in_new_session(
                db,
                origin=JobOrigin(user_id=user.id),
                title="survey",
                kind="survey",
                job_input={"topic": "t"},
                max_turns=3,
            )
            session_id = job.session_id
            assert session_id is not None
        with session_factory() as db, db.begin():
            stored = db.get(ChatSession, session_id)
            assert stored is not None and stored.message_seq == 0
            assert next_message_seq(db, session_id) == 1

    def test_an_empty_session_starts_at_one(self, session_factory: sessionmaker[Session]) -> None:
        user = make_user(session_factory)
        with session_factory() as db, db.begin():
            session_id = open_session(db, origin=JobOrigin(user_id=user.id), title="New").id
        with session_factory() as db, db.begin():
            assert next_message_seq(db, session_id) == 1
