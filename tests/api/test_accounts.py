"""Roles, ownership and API keys, as users see them through the HTTP API.

- Members get 403 on every admin route (taken from /openapi.json, so a new
  admin route is covered the day it appears).
- A project's jobs and sessions are readable by its members; only the owner,
  an admin or a project owner may change them; outsiders get 404.
- Keys: shown once, stored salted, revocable, expiring, last-used time kept
  cheaply, optionally scoped to one project (then only that project exists).
- Mass assignment: unknown fields are 422 and nothing changes; role, owner,
  budget and project fields cannot be set by a member.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import add_member, create_project
from services.common.models import ApiKey, Job, Project, ProjectMember, User
from tests.api.authz_matrix import probes, send
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services


@dataclass
class Lab:
    url: str
    admin: httpx.Client
    project: str  # name
    project_id: str
    other_project: str
    alice: TestUser  # member of project and other_project
    carol: TestUser  # member of project
    olga: TestUser  # owner of project
    dave: TestUser  # in no project
    admin_user: TestUser  # the admin behind ``admin``


def _join(factory: sessionmaker[Session], project: Project, user: TestUser, role: str) -> None:
    with factory() as db, db.begin():
        row = db.get(User, user.id)
        assert row is not None
        add_member(db, project=db.merge(project), user=row, role=role)


@pytest.fixture(scope="module")
def lab(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, session_factory: sessionmaker[Session]
) -> Iterator[Lab]:
    svc = Services(stack, tmp_path_factory.mktemp("accounts"))
    try:
        url = svc.api()  # no worker: jobs stay queued, which is all these tests read
        users = [make_user(session_factory) for _ in range(4)]
        alice, carol, olga, dave = users
        names = [f"p-{uuid.uuid4().hex[:8]}", f"q-{uuid.uuid4().hex[:8]}"]
        with session_factory() as db, db.begin():
            projects = [create_project(db, name=n) for n in names]
            db.expunge_all()
        _join(session_factory, projects[0], alice, "member")
        _join(session_factory, projects[0], carol, "member")
        _join(session_factory, projects[0], olga, "owner")
        _join(session_factory, projects[1], alice, "member")
        admin_user = make_user(session_factory, admin=True)
        admin = client_for(url, admin_user)
        project_id = str(projects[0].id)
        yield Lab(url, admin, names[0], project_id, names[1], alice, carol, olga, dave, admin_user)
    finally:
        svc.stop()


def _job(client: httpx.Client, project: str | None = None, **extra: object) -> httpx.Response:
    body: dict[str, object] = {"kind": "turn", "input": {"content": "hello"}, **extra}
    if project is not None:
        body["project"] = project
    return client.post("/v1/jobs", json=body)


def _count(factory: sessionmaker[Session], model: type, *where: object) -> int:
    with factory() as db:
        return int(db.scalar(select(func.count()).select_from(model).where(*where)) or 0)


class TestAdminRoutes:
    def test_a_member_gets_403_on_every_admin_route(self, lab: Lab) -> None:
        document = httpx.get(f"{lab.url}/openapi.json").json()
        ids = {
            "user_id": str(lab.alice.id),
            "key_id": str(uuid.uuid4()),
            "project_id": lab.project_id,
        }
        admin_paths = {p: v for p, v in document["paths"].items() if p.startswith("/v1/admin/")}
        assert len(admin_paths) >= 4
        member = client_for(lab.url, lab.carol)
        checked = 0
        for probe in probes({**document, "paths": admin_paths}, ids):
            resp = send(member, probe)
            assert resp.status_code == 403, f"{probe.method} {probe.template}: {resp.text}"
            assert resp.json()["error"]["code"] == "forbidden"
            checked += 1
        assert checked >= 8

    def test_project_members_are_added_listed_and_removed_with_roles(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        created = lab.admin.post("/v1/admin/projects", json={"name": f"r-{uuid.uuid4().hex[:6]}"})
        assert created.status_code == 201
        pid = created.json()["id"]
        added = lab.admin.post(
            f"/v1/admin/projects/{pid}/members", json={"email": lab.dave.email, "role": "owner"}
        )
        assert added.status_code == 201 and added.json()["role"] == "owner"
        listed = lab.admin.get(f"/v1/admin/projects/{pid}/members").json()["items"]
        # The creating admin is the project's first owner.
        assert sorted((m["email"], m["role"]) for m in listed) == sorted(
            [(lab.dave.email, "owner"), (lab.admin_user.email, "owner")]
        )
        bad_role = lab.admin.post(
            f"/v1/admin/projects/{pid}/members", json={"email": lab.dave.email, "role": "admin"}
        )
        assert bad_role.status_code == 422
        gone = lab.admin.delete(f"/v1/admin/projects/{pid}/members/{lab.dave.id}")
        assert gone.status_code == 204
        left = lab.admin.get(f"/v1/admin/projects/{pid}/members").json()["items"]
        assert [m["email"] for m in left] == [lab.admin_user.email]
        again = lab.admin.delete(f"/v1/admin/projects/{pid}/members/{lab.dave.id}")
        assert again.status_code == 404


class TestProjectSharing:
    def test_a_new_projects_creator_may_use_it_and_outsiders_are_told_why(self, lab: Lab) -> None:
        name = f"c-{uuid.uuid4().hex[:8]}"
        assert lab.admin.post("/v1/admin/projects", json={"name": name}).status_code == 201
        search = {"q": "attention", "project": name}
        # The creator is a member: the search passes the membership check (whatever the
        # library then answers), where before she was refused her own project.
        mine = lab.admin.get("/v1/library/search", params=search)
        assert "not a member" not in mine.text, mine.text
        outsider = client_for(lab.url, lab.dave).get("/v1/library/search", params=search)
        assert outsider.status_code == 404
        message = outsider.json()["error"]["message"]
        assert "not found, or you are not a member of it" in message, message

    def test_members_read_a_project_job_outsiders_get_404(self, lab: Lab) -> None:
        alice = client_for(lab.url, lab.alice)
        job = _job(alice, lab.project).json()
        session_id = job["session_id"]
        carol = client_for(lab.url, lab.carol)
        seen = carol.get(f"/v1/jobs/{job['id']}")
        assert seen.status_code == 200 and seen.json()["project_id"] == lab.project_id
        assert carol.get(f"/v1/jobs/{job['id']}/steps").status_code == 200
        assert carol.get(f"/v1/sessions/{session_id}").status_code == 200
        messages = carol.get(f"/v1/sessions/{session_id}/messages").json()["items"]
        assert [m["content"] for m in messages] == ["hello"]
        listed = carol.get("/v1/jobs", params={"project": lab.project}).json()["items"]
        assert job["id"] in [j["id"] for j in listed]
        dave = client_for(lab.url, lab.dave)
        for path in (f"/v1/jobs/{job['id']}", f"/v1/sessions/{session_id}"):
            assert dave.get(path).status_code == 404
        assert dave.get("/v1/jobs", params={"project": lab.project}).status_code == 404
        # Alice's personal job is hers alone, project or not.
        personal = _job(alice).json()
        assert carol.get(f"/v1/jobs/{personal['id']}").status_code == 404

    def test_only_owner_admin_or_project_owner_change_a_project_job(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(lab.url, lab.alice)
        job = _job(alice, lab.project).json()
        carol = client_for(lab.url, lab.carol)
        refused = carol.post(f"/v1/jobs/{job['id']}/cancel")
        assert refused.status_code == 403
        renamed = carol.patch(f"/v1/sessions/{job['session_id']}", json={"title": "mine now"})
        assert renamed.status_code == 403
        assert carol.delete(f"/v1/sessions/{job['session_id']}").status_code == 403
        posted = carol.post(f"/v1/sessions/{job['session_id']}/messages", json={"content": "x"})
        assert posted.status_code == 404  # turns run as the session's owner: only they add them
        with session_factory() as db:
            row = db.get(Job, uuid.UUID(job["id"]))
            assert row is not None and row.status == "queued" and not row.cancel_requested
        olga = client_for(lab.url, lab.olga)
        assert olga.post(f"/v1/jobs/{job['id']}/cancel").json()["status"] == "cancelled"
        second = _job(alice, lab.project).json()
        assert lab.admin.post(f"/v1/jobs/{second['id']}/cancel").status_code == 202


class TestKeys:
    def test_a_key_is_shown_once_stored_salted_and_found_by_prefix(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        made = lab.admin.post(f"/v1/admin/users/{lab.dave.id}/keys", json={"name": "laptop"})
        assert made.status_code == 201
        key = made.json()["key"]
        assert key.startswith("lf_") and len(key) >= 40
        listed = lab.admin.get(f"/v1/admin/users/{lab.dave.id}/keys")
        assert key not in listed.text
        mine = [k for k in listed.json()["items"] if k["id"] == made.json()["id"]]
        assert mine[0]["prefix"] == key[:10] and "key" not in mine[0]
        with session_factory() as db:
            row = db.get(ApiKey, uuid.UUID(made.json()["id"]))
            assert row is not None and row.salt
            assert key not in (row.key_hash, row.salt)
            assert row.key_hash != hashlib.sha256(key.encode()).hexdigest()
            assert row.key_hash == hashlib.sha256((row.salt + key).encode()).hexdigest()
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(key)).status_code == 200
        # A key with the right prefix and one wrong character is refused.
        forged = key[:-1] + ("A" if key[-1] != "A" else "B")
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(forged)).status_code == 401

    def test_keys_stored_before_salts_still_work(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        key = "lf_" + uuid.uuid4().hex + uuid.uuid4().hex
        with session_factory() as db, db.begin():
            db.add(
                ApiKey(
                    user_id=lab.dave.id,
                    key_hash=hashlib.sha256(key.encode()).hexdigest(),
                    prefix=key[:8],  # older rows used other prefix lengths
                )
            )
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(key)).status_code == 200

    def test_revoked_and_expired_keys_are_401(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        users = f"/v1/admin/users/{lab.dave.id}/keys"
        revoked = lab.admin.post(users, json={}).json()
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(revoked["key"])).status_code == 200
        lab.admin.delete(f"{users}/{revoked['id']}")
        resp = httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(revoked["key"]))
        assert resp.status_code == 401 and "revoked" in resp.json()["error"]["message"]

        soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        expiring = lab.admin.post(users, json={"expires_at": soon}).json()
        assert expiring["expires_at"]
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(expiring["key"])).status_code == 200
        with session_factory() as db, db.begin():
            db.execute(
                update(ApiKey)
                .where(ApiKey.id == uuid.UUID(expiring["id"]))
                .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
            )
        resp = httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(expiring["key"]))
        assert resp.status_code == 401 and "expired" in resp.json()["error"]["message"]
        naive = lab.admin.post(users, json={"expires_at": "2030-01-01T00:00:00"})
        assert naive.status_code == 422  # a time without a zone is ambiguous

    def test_last_used_is_recorded_at_most_once_a_minute(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        made = lab.admin.post(f"/v1/admin/users/{lab.dave.id}/keys", json={}).json()
        for _ in range(3):
            httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(made["key"]))
        with session_factory() as db:
            first = db.scalar(select(ApiKey.last_used_at).where(ApiKey.id == uuid.UUID(made["id"])))
        assert first is not None
        httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(made["key"]))
        with session_factory() as db, db.begin():
            second = db.scalar(
                select(ApiKey.last_used_at).where(ApiKey.id == uuid.UUID(made["id"]))
            )
            assert second == first  # within the minute: no write
            db.execute(
                update(ApiKey)
                .where(ApiKey.id == uuid.UUID(made["id"]))
                .values(last_used_at=first - timedelta(minutes=2))
            )
        httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(made["key"]))
        with session_factory() as db:
            third = db.scalar(select(ApiKey.last_used_at).where(ApiKey.id == uuid.UUID(made["id"])))
        assert third is not None and third > first

    def test_a_scoped_key_sees_and_creates_only_its_project(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(lab.url, lab.alice)
        in_x = _job(alice, lab.project).json()
        in_y = _job(alice, lab.other_project).json()
        personal = _job(alice).json()
        made = lab.admin.post(
            f"/v1/admin/users/{lab.alice.id}/keys", json={"project": lab.project}
        ).json()
        assert made["project_id"] == lab.project_id
        scoped = httpx.Client(base_url=lab.url, headers=_bearer(made["key"]), timeout=30)
        assert scoped.get(f"/v1/jobs/{in_x['id']}").status_code == 200
        for other in (in_y, personal):
            assert scoped.get(f"/v1/jobs/{other['id']}").status_code == 404
            assert scoped.get(f"/v1/sessions/{other['session_id']}").status_code == 404
            assert scoped.post(f"/v1/jobs/{other['id']}/cancel").status_code == 404
        listed = {j["id"] for j in scoped.get("/v1/jobs").json()["items"]}
        assert in_x["id"] in listed and not {in_y["id"], personal["id"]} & listed
        assert scoped.get("/v1/jobs", params={"project": lab.other_project}).status_code == 404
        # What it creates lands in its project, and it cannot name another one.
        new = _job(scoped).json()
        assert scoped.get(f"/v1/jobs/{new['id']}").json()["project_id"] == lab.project_id
        before = _count(session_factory, Job, Job.user_id == lab.alice.id)
        assert _job(scoped, lab.other_project).status_code == 404
        assert _count(session_factory, Job, Job.user_id == lab.alice.id) == before
        session = scoped.post("/v1/sessions", json={}).json()
        assert session["project_id"] == lab.project_id

    def test_an_admins_scoped_key_is_not_an_admin_key(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        boss = make_user(session_factory, admin=True)
        lab.admin.post(f"/v1/admin/projects/{lab.project_id}/members", json={"email": boss.email})
        made = lab.admin.post(f"/v1/admin/users/{boss.id}/keys", json={"project": lab.project})
        scoped = httpx.Client(base_url=lab.url, headers=_bearer(made.json()["key"]), timeout=30)
        assert scoped.get("/v1/admin/users").status_code == 403
        assert client_for(lab.url, boss).get("/v1/admin/users").status_code == 200

    def test_a_scope_needs_membership_and_ends_with_it(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        refused = lab.admin.post(
            f"/v1/admin/users/{lab.dave.id}/keys", json={"project": lab.project}
        )
        assert refused.status_code == 422
        pid = lab.admin.post("/v1/admin/projects", json={"name": f"s-{uuid.uuid4().hex[:6]}"})
        project_id = pid.json()["id"]
        lab.admin.post(f"/v1/admin/projects/{project_id}/members", json={"email": lab.dave.email})
        made = lab.admin.post(
            f"/v1/admin/users/{lab.dave.id}/keys", json={"project": project_id}
        ).json()
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(made["key"])).status_code == 200
        lab.admin.delete(f"/v1/admin/projects/{project_id}/members/{lab.dave.id}")
        assert httpx.get(f"{lab.url}/v1/jobs", headers=_bearer(made["key"])).status_code == 401


class TestMassAssignment:
    @pytest.mark.parametrize(
        "extra",
        [
            {"user_id": "00000000-0000-0000-0000-000000000001"},
            {"owner": "someone@lab.test"},
            {"project_id": "00000000-0000-0000-0000-000000000001"},
            {"budget_usd": 1000},
            {"is_admin": True},
            {"role": "owner"},
            {"status": "succeeded"},
        ],
    )
    def test_unknown_fields_on_a_job_are_422_and_create_nothing(
        self, lab: Lab, session_factory: sessionmaker[Session], extra: dict[str, object]
    ) -> None:
        before = _count(session_factory, Job, Job.user_id == lab.dave.id)
        resp = _job(client_for(lab.url, lab.dave), **extra)
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["code"] == "invalid_request"
        assert _count(session_factory, Job, Job.user_id == lab.dave.id) == before

    def test_a_session_cannot_be_moved_or_given_away(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(lab.url, lab.alice)
        session = alice.post("/v1/sessions", json={"title": "mine"}).json()
        for extra in (
            {"user_id": str(lab.dave.id)},
            {"project_id": lab.project_id},
            {"project": lab.project},
        ):
            resp = alice.patch(f"/v1/sessions/{session['id']}", json={"title": "x", **extra})
            assert resp.status_code == 422, (extra, resp.text)
        after = alice.get(f"/v1/sessions/{session['id']}").json()
        assert after["title"] == "mine" and after["project_id"] is None
        created = alice.post("/v1/sessions", json={"user_id": str(lab.dave.id)})
        assert created.status_code == 422

    def test_a_member_cannot_grant_roles_or_join_projects(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        dave = client_for(lab.url, lab.dave)
        email = f"{uuid.uuid4().hex[:8]}@lab.test"
        assert (
            dave.post("/v1/admin/users", json={"email": email, "is_admin": True}).status_code == 403
        )
        assert _count(session_factory, User, User.email == email) == 0
        joined = dave.post(
            f"/v1/admin/projects/{lab.project_id}/members",
            json={"email": lab.dave.email, "role": "owner"},
        )
        assert joined.status_code == 403
        assert (
            _count(
                session_factory,
                ProjectMember,
                ProjectMember.user_id == lab.dave.id,
                ProjectMember.project_id == uuid.UUID(lab.project_id),
            )
            == 0
        )
        before = _count(session_factory, Job, Job.user_id == lab.dave.id)
        assert _job(dave, lab.project).status_code == 404  # not a member: no such project
        assert _count(session_factory, Job, Job.user_id == lab.dave.id) == before
        key = dave.post(f"/v1/admin/users/{lab.dave.id}/keys", json={"project": lab.project})
        assert key.status_code == 403
        # Admin bodies refuse unknown fields too.
        sneaky = lab.admin.post(
            f"/v1/admin/users/{lab.dave.id}/keys", json={"user_id": str(lab.alice.id)}
        )
        assert sneaky.status_code == 422


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


class TestSessionTitles:
    def test_an_untitled_session_is_named_by_its_first_message_only(self, lab: Lab) -> None:
        alice = client_for(lab.url, lab.alice)
        untitled = alice.post("/v1/sessions", json={}).json()
        assert untitled["title"] == "New session"
        first = "Compare   attention variants for long documents, with their memory costs and " * 2
        assert (
            alice.post(
                f"/v1/sessions/{untitled['id']}/messages", json={"content": first + "\nmore"}
            ).status_code
            == 202
        )
        alice.post(f"/v1/sessions/{untitled['id']}/messages", json={"content": "and another"})
        title = alice.get(f"/v1/sessions/{untitled['id']}").json()["title"]
        assert title.startswith("Compare attention variants for long") and title.endswith("…")
        assert len(title) <= 60 and "\n" not in title
        named = alice.post("/v1/sessions", json={"title": "Reading group"}).json()
        alice.post(f"/v1/sessions/{named['id']}/messages", json={"content": "hello there"})
        assert alice.get(f"/v1/sessions/{named['id']}").json()["title"] == "Reading group"


class TestSessionKinds:
    def test_the_chat_list_leaves_out_sessions_opened_for_surveys(
        self, lab: Lab, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(lab.url, lab.alice)
        # A batch task's (or a subagent's) session: its job has a parent.
        task_session = alice.post("/v1/sessions", json={"title": "batch task 1"}).json()["id"]
        with session_factory() as db, db.begin():
            parent = Job(user_id=lab.alice.id, kind="batch", status="running", input={})
            db.add(parent)
            db.flush()
            db.add(
                Job(
                    user_id=lab.alice.id,
                    kind="turn",
                    status="queued",
                    input={"content": "a"},
                    session_id=uuid.UUID(task_session),
                    parent_job_id=parent.id,
                )
            )
        chat = alice.post("/v1/sessions", json={"title": "talk"}).json()["id"]
        survey = alice.post("/v1/jobs", json={"kind": "survey", "input": {"topic": "x y"}})
        assert survey.status_code == 202, survey.text
        survey_session = survey.json()["session_id"]
        chats = [s["id"] for s in alice.get("/v1/sessions?kind=chat").json()["items"]]
        everything = [s["id"] for s in alice.get("/v1/sessions").json()["items"]]
        assert chat in chats and survey_session not in chats and task_session not in chats
        assert {chat, survey_session, task_session} <= set(everything)
        assert alice.get("/v1/sessions?kind=nope").status_code == 422
