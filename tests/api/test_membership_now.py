"""Removal from a project ends access to its objects at once, her own included.

Against a real API process: Alice works in a project (a session with a turn, a
job with an approval waiting, a paper in the project library), then an admin
removes her from the project. Every action on those objects — adding a turn,
submitting into the session, reading, renaming, deleting, cancelling, deciding
the approval, the job's steps, events, artifacts and trace, listing — now
answers as for an object that does not exist, while her personal session keeps
working and a remaining member still reads her project job.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import add_member
from services.common.db import transaction
from services.common.models import Approval, Job, Project, User
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_project, make_user
from tests.fixtures.processes import Services


@dataclass
class Api:
    url: str
    admin: httpx.Client


@pytest.fixture(scope="module")
def api(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, session_factory: sessionmaker[Session]
) -> Iterator[Api]:
    svc = Services(stack, tmp_path_factory.mktemp("membership"))
    try:
        url = svc.api()
        yield Api(url, client_for(url, make_user(session_factory, admin=True)))
    finally:
        svc.stop()


@dataclass
class Work:
    project_id: str
    session_id: str
    job_id: str
    trace_id: str
    approval_id: str
    personal_session: str


def _work(api: Api, factory: sessionmaker[Session], alice: TestUser, project: str) -> Work:
    client = client_for(api.url, alice)
    session = client.post("/v1/sessions", json={"title": "optics", "project": project}).json()
    resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "go"})
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["job_id"]
    personal = client.post("/v1/sessions", json={"title": "mine"}).json()["id"]
    with transaction(factory) as db:
        project_id = str(db.query(Project).filter(Project.name == project).one().id)
        approval = Approval(
            job_id=uuid.UUID(job_id),
            step_key="tool:0:call_0_0",
            tool_name="write_file",
            kind="file_write",
            diffs=[{"path": "paper.tex", "diff": "+x"}],
            baselines={"paper.tex": None},
            status="pending",
        )
        db.add(approval)
        db.flush()
        approval_id = str(approval.id)
    trace_id = client.get(f"/v1/jobs/{job_id}").json()["trace_id"]
    return Work(project_id, session["id"], job_id, trace_id, approval_id, personal)


def _reads(w: Work) -> list[str]:
    return [
        f"/v1/sessions/{w.session_id}",
        f"/v1/sessions/{w.session_id}/messages",
        f"/v1/sessions/{w.session_id}/commands",
        f"/v1/jobs/{w.job_id}",
        f"/v1/jobs/{w.job_id}/steps",
        f"/v1/jobs/{w.job_id}/artifacts",
        f"/v1/jobs/{w.job_id}/approvals",
        f"/v1/traces/{w.trace_id}",
    ]


def _listed(client: httpx.Client, w: Work) -> tuple[bool, bool]:
    sessions = [s["id"] for s in client.get("/v1/sessions").json()["items"]]
    jobs = [j["id"] for j in client.get("/v1/jobs").json()["items"]]
    return w.session_id in sessions, w.job_id in jobs


def test_a_removed_member_can_do_nothing_more_with_her_project_objects(
    api: Api, session_factory: sessionmaker[Session]
) -> None:
    alice, bob = make_user(session_factory), make_user(session_factory)
    project = make_project(session_factory, alice, bob)
    w = _work(api, session_factory, alice, project)
    client = client_for(api.url, alice)
    # While a member: every one of these answers.
    for path in _reads(w):
        assert client.get(path).status_code == 200, path
    with client.stream("GET", f"/v1/jobs/{w.job_id}/events") as stream:
        assert stream.status_code == 200
    assert _listed(client, w) == (True, True)

    resp = api.admin.delete(f"/v1/admin/projects/{w.project_id}/members/{alice.id}")
    assert resp.status_code == 204, resp.text

    turn = {"content": "one more"}
    for method, path, body in [
        ("POST", f"/v1/sessions/{w.session_id}/messages", turn),
        ("POST", "/v1/jobs", {"kind": "turn", "input": turn, "session_id": w.session_id}),
        ("PATCH", f"/v1/sessions/{w.session_id}", {"title": "renamed"}),
        ("DELETE", f"/v1/sessions/{w.session_id}", None),
        ("POST", f"/v1/jobs/{w.job_id}/cancel", None),
        ("POST", f"/v1/jobs/{w.job_id}/approvals/{w.approval_id}", {"decision": "apply"}),
        ("GET", f"/v1/jobs/{w.job_id}/events", None),
        *[("GET", path, None) for path in _reads(w)],
    ]:
        resp = client.request(method, path, json=body) if body else client.request(method, path)
        assert resp.status_code == 404, f"{method} {path} -> {resp.status_code}: {resp.text}"
    assert _listed(client, w) == (False, False)
    # Nothing she sent changed anything: the approval waits, the job was not cancelled.
    with session_factory() as db:
        approval = db.get(Approval, uuid.UUID(w.approval_id))
        assert approval is not None and approval.status == "pending"
        job = db.get(Job, uuid.UUID(w.job_id))
        assert job is not None and not job.cancel_requested
    bobs = client_for(api.url, bob)
    assert bobs.get(f"/v1/jobs/{w.job_id}").status_code == 200
    assert bobs.get(f"/v1/sessions/{w.session_id}").json()["title"] == "optics"
    # Her personal work is untouched by the removal.
    resp = client.post(f"/v1/sessions/{w.personal_session}/messages", json=turn)
    assert resp.status_code == 202, resp.text
    # Added back: the same objects are hers again.
    with transaction(session_factory) as db:
        user = db.get(User, alice.id)
        row = db.get(Project, uuid.UUID(w.project_id))
        assert user is not None and row is not None
        add_member(db, project=row, user=user, role="member")
    assert client.get(f"/v1/sessions/{w.session_id}").status_code == 200
