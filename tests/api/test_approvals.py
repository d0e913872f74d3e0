"""The approval routes' contract: who may decide, what a bad decision gets.

Only the API runs (no worker): the job and its pending approval are written as
the worker would write them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Approval, Job
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services


@dataclass
class Waiting:
    url: str
    owner: TestUser
    job_id: str
    approval_id: str


@pytest.fixture
def waiting(services: Services, session_factory: sessionmaker[Session]) -> Iterator[Waiting]:
    url = services.api()
    owner = make_user(session_factory)
    client = client_for(url, owner)
    job_id = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "x"}}).json()["id"]
    with session_factory() as db, db.begin():
        db.execute(update(Job).where(Job.id == uuid.UUID(job_id)).values(status="waiting_approval"))
        approval = Approval(
            job_id=uuid.UUID(job_id),
            step_key="tool:0:call_0_0",
            tool_name="write_file",
            kind="file_write",
            diffs=[{"path": "paper.tex", "tool": "write_file", "diff": "+x"}],
            baselines={"paper.tex": None},
            status="pending",
        )
        db.add(approval)
        db.flush()
        approval_id = str(approval.id)
    yield Waiting(url, owner, job_id, approval_id)


def _path(w: Waiting, approval_id: str | None = None) -> str:
    return f"/v1/jobs/{w.job_id}/approvals/{approval_id or w.approval_id}"


class TestAuthorisation:
    def test_another_user_gets_404_and_decides_nothing(
        self, waiting: Waiting, session_factory: sessionmaker[Session]
    ) -> None:
        other = client_for(waiting.url, make_user(session_factory))
        assert other.get(f"/v1/jobs/{waiting.job_id}/approvals").status_code == 404
        resp = other.post(_path(waiting), json={"decision": "apply"})
        assert resp.status_code == 404
        assert resp.json()["error"]["code"] == "not_found"
        owner = client_for(waiting.url, waiting.owner)
        (item,) = owner.get(f"/v1/jobs/{waiting.job_id}/approvals").json()["items"]
        assert item["status"] == "pending"
        assert owner.get(f"/v1/jobs/{waiting.job_id}").json()["status"] == "waiting_approval"

    def test_an_admin_may_decide(
        self, waiting: Waiting, session_factory: sessionmaker[Session]
    ) -> None:
        admin = make_user(session_factory, admin=True)
        resp = client_for(waiting.url, admin).post(_path(waiting), json={"decision": "reject"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["decided_by"] == str(admin.id)


class TestBadInput:
    @pytest.mark.parametrize(
        "body",
        [
            {"decision": "approve"},
            {"decision": ""},
            {},
            {"decision": "apply", "extra": 1},
            {"decision": "apply", "feedback": "a\u0000b"},
            {"decision": "request_changes"},
            {"decision": "request_changes", "feedback": "   "},
        ],
    )
    def test_a_bad_decision_is_422_and_changes_nothing(self, waiting: Waiting, body: dict) -> None:
        owner = client_for(waiting.url, waiting.owner)
        resp = owner.post(_path(waiting), json=body)
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["code"] == "invalid_request"
        (item,) = owner.get(f"/v1/jobs/{waiting.job_id}/approvals").json()["items"]
        assert item["status"] == "pending"

    def test_unknown_or_malformed_approval_ids_are_404(self, waiting: Waiting) -> None:
        owner = client_for(waiting.url, waiting.owner)
        for approval_id in (str(uuid.uuid4()), "not-a-uuid"):
            resp = owner.post(_path(waiting, approval_id), json={"decision": "apply"})
            assert resp.status_code == 404, resp.text

    def test_deciding_twice_is_409_and_the_first_decision_stands(self, waiting: Waiting) -> None:
        owner = client_for(waiting.url, waiting.owner)
        first = owner.post(
            _path(waiting), json={"decision": "request_changes", "feedback": "shorter"}
        )
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "changes_requested"
        # The job is runnable again (a worker would take it now).
        assert owner.get(f"/v1/jobs/{waiting.job_id}").json()["status"] == "running"
        second = owner.post(_path(waiting), json={"decision": "apply"})
        assert second.status_code == 409
        (item,) = owner.get(f"/v1/jobs/{waiting.job_id}/approvals").json()["items"]
        assert item["status"] == "changes_requested" and item["feedback"] == "shorter"
