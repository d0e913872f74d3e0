"""The exec's claim reads what the run needs in its own statement (the user's sessions
for the disk caps, the project's network policy) and keeps its guarantees: a key is
claimed once, a later claim of it gets the stored result, a read that fails claims
nothing, and a policy change holds from the next claim on."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, literal, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import ChatSession, Project
from services.sandbox import executions, quota
from services.sandbox.service import network_read
from tests.sandbox.conftest import JobRefs, make_job


def claim(
    factory: sessionmaker[Session], refs: JobRefs, call: str, *reads: object
) -> executions.Claim:
    return executions.claim(
        factory,
        key=executions.exec_key(refs.job_id, call),
        job_id=refs.job_id,
        tool_call_id=call,
        owner="me/1/x",
        run_for_s=30,
        reads=reads,  # type: ignore[arg-type]
    )


def sessions_of(factory: sessionmaker[Session], user_id: str, n: int) -> set[uuid.UUID]:
    with factory() as s, s.begin():
        rows = [ChatSession(user_id=uuid.UUID(user_id), title="reads") for _ in range(n)]
        s.add_all(rows)
        s.flush()
        return {row.id for row in rows}


class TestClaimReads:
    def test_the_first_claim_is_fresh_and_reads_the_users_sessions_and_network(
        self, sandbox_tables: None, session_factory: sessionmaker[Session]
    ) -> None:
        refs = make_job(session_factory, allow_network=True)
        sessions = sessions_of(session_factory, refs.user_id, 3)
        got = claim(
            session_factory,
            refs,
            "call_reads",
            quota.sessions_read(uuid.UUID(refs.user_id)),
            network_read(refs.project_id),
        )
        assert got.fresh is True
        assert set(got.reads[0]) == sessions
        assert got.reads[1] is True
        row = executions.stored(session_factory, executions.exec_key(refs.job_id, "call_reads"))
        assert row is not None and row.status == "running" and row.owner == "me/1/x"

    def test_a_second_claim_of_the_key_is_not_fresh_and_gets_the_stored_result(
        self, sandbox_tables: None, session_factory: sessionmaker[Session]
    ) -> None:
        refs = make_job(session_factory)
        reads = (quota.sessions_read(uuid.UUID(refs.user_id)), network_read(refs.project_id))
        first = claim(session_factory, refs, "call_twice", *reads)
        assert first.fresh is True
        key = executions.exec_key(refs.job_id, "call_twice")
        executions.finish(session_factory, key=key, result={"status": "ok", "stdout": "1\n"})
        second = claim(session_factory, refs, "call_twice", *reads)
        assert second.fresh is False
        assert second.result == {"status": "ok", "stdout": "1\n"}
        assert second.reads[1] is False  # the project has no network

    def test_a_read_that_fails_claims_nothing(
        self, sandbox_tables: None, session_factory: sessionmaker[Session]
    ) -> None:
        refs = make_job(session_factory)
        with pytest.raises(DBAPIError):
            claim(session_factory, refs, "call_failed_read", literal(1) / func.abs(0))
        assert (
            executions.stored(session_factory, executions.exec_key(refs.job_id, "call_failed_read"))
            is None
        )
        assert claim(session_factory, refs, "call_failed_read").fresh is True

    def test_a_projects_network_change_holds_from_the_next_claim(
        self, sandbox_tables: None, session_factory: sessionmaker[Session]
    ) -> None:
        refs = make_job(session_factory)
        assert claim(session_factory, refs, "call_n1", network_read(refs.project_id)).reads == (
            False,
        )
        with session_factory() as s, s.begin():
            s.execute(
                update(Project)
                .where(Project.id == uuid.UUID(refs.project_id))
                .values(allow_network=True)
            )
        assert claim(session_factory, refs, "call_n2", network_read(refs.project_id)).reads == (
            True,
        )

    def test_no_user_and_no_project_read_as_nothing(
        self, sandbox_tables: None, session_factory: sessionmaker[Session]
    ) -> None:
        refs = make_job(session_factory)
        reads = (quota.sessions_read(None), network_read("not-a-uuid"))
        got = claim(session_factory, refs, "call_none", *reads)
        assert got.fresh is True
        assert got.reads == ([], False)
