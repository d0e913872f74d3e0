"""The access check folded into the step statements answers as the standalone one.

The agent loop reads whether a job's user may still act in its project from a
subquery inside the lease's UPDATE and every ledger write
(``membership.access_verdict``), not from a statement of its own. Against a real
Postgres: for each kind of user (member, admin outside the project, outsider,
disabled, gone) and job (project, personal) the subquery gives the same reason
as ``access_now``, and a ledger write reads it back for the job's own user.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine, delete, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.statuses import StepStatus
from services.common.db import transaction
from services.common.models import Project, ProjectMember, User
from services.common.turns import JobOrigin, create_queued_job
from services.worker.spine.lease import Lease
from services.worker.spine.membership import access_now, access_verdict, revoked_reason
from services.worker.spine.recorder import StepWrite, record
from tests.fixtures.builders import make_project, make_user

ALLOWED = {"member": True, "admin_outside": True, "personal": True}
CASES = ["member", "admin_outside", "outsider", "disabled", "gone", "personal"]
VERDICT_SQL = text(
    "SELECT "
    + access_verdict(user="CAST(:user_id AS uuid)", project="CAST(:project_id AS uuid)")
    + " AS verdict"
)


def _writer(factory: sessionmaker[Session]) -> Engine:
    engine = factory.kw["bind"]
    assert isinstance(engine, Engine)
    return engine


def _actor(factory: sessionmaker[Session], case: str) -> tuple[uuid.UUID, uuid.UUID | None]:
    """A user in the state ``case`` names, and the project a job of theirs runs in."""
    user = make_user(factory, admin=case == "admin_outside")
    name = make_project(factory, user)
    with transaction(factory) as db:
        project = db.scalar(select(Project).where(Project.name == name))
        assert project is not None
        if case in ("outsider", "admin_outside"):
            db.execute(delete(ProjectMember).where(ProjectMember.user_id == user.id))
        elif case == "disabled":
            db.execute(update(User).where(User.id == user.id).values(disabled=True))
        elif case == "gone":
            db.execute(delete(User).where(User.id == user.id))
        return user.id, None if case == "personal" else project.id


@pytest.mark.parametrize("case", CASES)
def test_the_subquery_gives_the_reason_access_now_gives(
    session_factory: sessionmaker[Session], case: str
) -> None:
    user_id, project_id = _actor(session_factory, case)
    writer = _writer(session_factory)
    with writer.connect() as conn:
        verdict = conn.execute(VERDICT_SQL, {"user_id": user_id, "project_id": project_id})
        reason = revoked_reason(str(verdict.scalar_one()))
    assert reason == access_now(writer, user_id=user_id, project_id=project_id).revoked
    assert (reason is None) == ALLOWED.get(case, False), (case, reason)


@pytest.mark.parametrize("case", ["member", "outsider", "disabled"])
def test_a_ledger_write_reads_its_jobs_verdict(
    session_factory: sessionmaker[Session], case: str
) -> None:
    user_id, project_id = _actor(session_factory, case)
    with transaction(session_factory) as db:
        job = create_queued_job(
            db,
            origin=JobOrigin(user_id=user_id, project_id=project_id),
            kind="batch",
            job_input={"tasks": []},
            session=None,
            max_turns=1,
        )
        job_id = job.id
    done = record(
        _writer(session_factory),
        Lease(job_id=job_id, fence=0, owner="test"),
        session_id=None,
        step=StepWrite(key="t", kind="tool", name="t", round_no=0, status=StepStatus.SUCCEEDED),
    )
    assert done.access is not None
    assert (revoked_reason(done.access) is None) == ALLOWED.get(case, False), done.access
