"""Access guarantees no other test protected, each against a real API process.

- ``GET /v1/jobs?all=true`` by a non-admin lists only the caller's own jobs (the
  admin condition is what keeps every user's jobs and inputs private).
- A disabled user's keys stop working at once, on every kind of route.
- An approval is decided only through its own job: naming another job the
  caller owns (and which also waits for approval) is 404 and changes nothing.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import transaction
from services.common.models import Approval, Job, User
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import Services


@pytest.fixture(scope="module")
def api_url(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    svc = Services(stack, tmp_path_factory.mktemp("access_guarantees"))
    try:
        yield svc.api()
    finally:
        svc.stop()


def _turn(client: httpx.Client, content: str) -> str:
    session = client.post("/v1/sessions", json={"title": "t"}).json()
    resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": content})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["job_id"])


def test_all_true_by_a_member_lists_only_her_own_jobs(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    alice, bob = make_user(session_factory), make_user(session_factory)
    admin = make_user(session_factory, admin=True)
    secret = "alice-input-" + secrets.token_hex(6)
    alices = _turn(client_for(api_url, alice), secret)
    bobs = _turn(client_for(api_url, bob), "bob's question")
    for params in ({"all": "true"}, {"all": "1"}, {"all": "true", "limit": "500"}):
        resp = client_for(api_url, bob).get("/v1/jobs", params=params)
        assert resp.status_code == 200, resp.text
        ids = [j["id"] for j in resp.json()["items"]]
        assert bobs in ids and alices not in ids, params
        assert secret not in resp.text
    resp = client_for(api_url, bob).get("/v1/jobs", params={"user": str(alice.id)})
    assert resp.status_code == 403
    # The admin does see everyone's (so the flag is really the admin's).
    listed = client_for(api_url, admin).get("/v1/jobs", params={"all": "true", "limit": "500"})
    assert {alices, bobs} <= {j["id"] for j in listed.json()["items"]}


def test_a_disabled_users_keys_stop_working(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    client = client_for(api_url, user)
    job_id = _turn(client, "before")
    assert client.get(f"/v1/jobs/{job_id}").status_code == 200
    with transaction(session_factory) as db:
        db.execute(update(User).where(User.id == user.id).values(disabled=True))
    for method, path, body in (
        ("GET", "/v1/jobs", None),
        ("GET", f"/v1/jobs/{job_id}", None),
        ("POST", "/v1/sessions", {"title": "after"}),
        ("GET", "/v1/library/documents", None),
    ):
        resp = client.request(method, path, json=body)
        assert resp.status_code == 401, (method, path, resp.text)
        assert "disabled" in resp.json()["error"]["message"]


def test_an_approval_is_decided_only_through_its_own_job(
    api_url: str, session_factory: sessionmaker[Session]
) -> None:
    alice = make_user(session_factory)
    client = client_for(api_url, alice)
    first, second = _turn(client, "one"), _turn(client, "two")
    with transaction(session_factory) as db:
        approval = Approval(
            job_id=uuid.UUID(first),
            step_key="tool:0:call_0_0",
            tool_name="write_file",
            kind="file_write",
            diffs=[{"path": "paper.tex", "diff": "+x"}],
            baselines={"paper.tex": None},
            status="pending",
        )
        db.add(approval)
        # Both wait for approval: only the job match can refuse the wrong one.
        db.execute(
            update(Job)
            .where(Job.id.in_([uuid.UUID(first), uuid.UUID(second)]))
            .values(status="waiting_approval")
        )
        db.flush()
        approval_id = str(approval.id)
    resp = client.post(f"/v1/jobs/{second}/approvals/{approval_id}", json={"decision": "apply"})
    assert resp.status_code == 404, resp.text
    with session_factory() as db:
        row = db.get(Approval, uuid.UUID(approval_id))
        assert row is not None and row.status == "pending" and row.decided_by is None
    # Through its own job it is decided (the route itself works).
    resp = client.post(f"/v1/jobs/{first}/approvals/{approval_id}", json={"decision": "reject"})
    assert resp.status_code == 200, resp.text
