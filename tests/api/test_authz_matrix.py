"""Every route and method of /openapi.json, with user A's ids and user B's key (or none).

With A's ids in the path, B gets 403 or 404; on routes without ids, B sees
only B's own things. Nothing B sends changes A's data, and no response to B
contains A's ids or text.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.api.admin.service import create_api_key
from services.common.db import transaction
from services.common.models import (
    ApiKey,
    Approval,
    Artifact,
    Job,
    MemoryProposal,
    Notification,
    Project,
    ProjectMember,
    User,
)
from tests.api.authz_matrix import PUBLIC_ROUTES, probes, send, with_query_variants
from tests.api.live_library import api_with_library
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_project, make_user
from tests.library.conftest import PDF_DIR

ARTIFACT = "out/report.html"


@dataclass
class World:
    url: str
    alice: TestUser
    bob: TestUser  # in none of Alice's projects
    carol: TestUser  # a member of Alice's project
    ids: dict[str, str]
    secrets_of_alice: list[str]
    personal_ids: dict[str, str]  # the same, with a session and job outside any project


@pytest.fixture(scope="module")
def world(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> Iterator[World]:
    with api_with_library(stack, tmp_path_factory.mktemp("matrix"), isolated_redis_url) as url:
        alice, bob = make_user(session_factory), make_user(session_factory)
        carol = make_user(session_factory)
        project = make_project(session_factory, alice, carol)
        client = client_for(url, alice)
        marker = "alice-secret-" + secrets.token_hex(6)
        session = client.post(
            "/v1/sessions", json={"title": marker, "system_prompt": marker, "project": project}
        ).json()
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": marker}
        ).json()["job_id"]
        job = client.get(f"/v1/jobs/{job_id}").json()
        with transaction(session_factory) as db:
            db.add(
                Artifact(
                    job_id=uuid.UUID(job_id),
                    name=ARTIFACT,
                    mime="text/html",
                    size=len(marker),
                    sha256="0" * 64,
                    content=marker.encode(),
                )
            )
            approval = Approval(
                job_id=uuid.UUID(job_id),
                step_key="tool:0:call_0_0",
                tool_name="write_file",
                kind="file_write",
                diffs=[{"path": "paper.tex", "diff": marker}],
                baselines={"paper.tex": None},
                status="pending",
            )
            db.add(approval)
            db.flush()
            approval_id = str(approval.id)
            key = db.query(ApiKey).filter(ApiKey.user_id == alice.id).one()
            project_id = str(db.query(Project).filter(Project.name == project).one().id)
            # Alice's project memory proposal: read by members, decided by owners only.
            proposal = MemoryProposal(
                project_id=uuid.UUID(project_id),
                kind="notes",
                content=marker,
                proposed_by=alice.id,
                job_id=uuid.UUID(job_id),
                step_key="tool:0:call_0_0",
                status="pending",
            )
            db.add(proposal)
            db.flush()
            proposal_id = str(proposal.id)
            # Alice's in-app notification, its title her secret: nobody else lists it.
            db.add(
                Notification(
                    user_id=alice.id,
                    job_id=uuid.UUID(job_id),
                    project_id=uuid.UUID(project_id),
                    event="job.succeeded",
                    body={"kind": "turn", "status": "succeeded", "title": marker},
                )
            )
        ids = {
            "job_id": job_id,
            "session_id": session["id"],
            "trace_id": job["trace_id"],
            "name": ARTIFACT,
            "user_id": str(alice.id),
            "key_id": str(key.id),
            "project_id": project_id,
            "approval_id": approval_id,
            "proposal_id": proposal_id,
            "document_id": _upload(client, project, f"{marker}.pdf"),
            "webhook_id": _webhook(client, project),
            "schedule_id": _schedule(client, project, marker),
            "import_id": _import(client, project, marker),
        }
        _project_settings(client, project, alice, session_factory)
        personal = _personal(client, marker)
        personal_ids = {**ids, **personal}
        alices = [marker, alice.email, job_id, session["id"], *personal.values()]
        yield World(url, alice, bob, carol, ids, alices, personal_ids)


def _personal(client: httpx.Client, marker: str) -> dict[str, str]:
    """Alice's session and job outside any project: only ownership protects them."""
    session = client.post("/v1/sessions", json={"title": marker}).json()
    job_id = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": marker}).json()[
        "job_id"
    ]
    trace_id = client.get(f"/v1/jobs/{job_id}").json()["trace_id"]
    return {"session_id": session["id"], "job_id": job_id, "trace_id": trace_id}


def _project_settings(
    client: httpx.Client, project: str, alice: TestUser, factory: sessionmaker[Session]
) -> None:
    """Alice owns her project and has it e-mail every member of job.failed."""
    with transaction(factory) as db:
        db.query(ProjectMember).filter(ProjectMember.user_id == alice.id).update({"role": "owner"})
    resp = client.put(
        "/v1/notifications/settings",
        params={"project": project},
        json={"email": True, "events": ["job.failed"], "recipients": "members"},
    )
    assert resp.status_code == 200, resp.text


def _webhook(client: httpx.Client, project: str) -> str:
    """Alice's webhook for her project's jobs: members see it, only she removes it."""
    resp = client.post(
        "/v1/webhooks", json={"url": "https://hooks.example.org/lab", "project": project}
    )
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def _schedule(client: httpx.Client, project: str, marker: str) -> str:
    """Alice's yearly schedule in her project: members see it, only she (or a project
    owner, an admin) pauses, resumes or removes it."""
    resp = client.post(
        "/v1/schedules",
        json={
            "cron": "0 0 1 1 *",
            "job": {"kind": "turn", "input": {"content": marker}},
            "project": project,
        },
    )
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def _import(client: httpx.Client, project: str, marker: str) -> str:
    """Alice's bibliography import into her project: only she reads it."""
    bib = f"@article{{{marker}, title = {{The Paper Titled {marker}}}, year = 2024}}"
    resp = client.post(
        "/v1/library/imports",
        files={"file": ("refs.bib", bib.encode(), "application/x-bibtex")},
        data={"project": project},
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def _upload(client: httpx.Client, project: str, filename: str) -> str:
    """One of Alice's papers in her project's library (queued is enough: the row exists)."""
    pdf = sorted(PDF_DIR.glob("*.pdf"))[0].read_bytes()
    resp = client.post(
        "/v1/library/documents",
        files={"file": (filename, pdf, "application/pdf")},
        data={"project": project},
    )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def _document(world: World) -> dict:
    return httpx.get(f"{world.url}/openapi.json").json()


class TestAuthorisationMatrix:
    def test_another_users_ids_answer_403_or_404_and_leak_nothing(
        self, world: World, session_factory: sessionmaker[Session]
    ) -> None:
        bob = client_for(world.url, world.bob)
        checked = varied = 0
        seen: set[tuple[str, str]] = set()
        document = _document(world)
        every = [*with_query_variants(document, world.ids), *probes(document, world.personal_ids)]
        for probe in every:
            if (probe.method, probe.template) in PUBLIC_ROUTES:
                continue
            if probe.params and probe.template.endswith("/events"):
                continue  # the stream's own parameters (resume ids) name nothing of A's
            resp = send(bob, probe)
            where = (
                f"{probe.method} {probe.template} {probe.params or ''} -> "
                f"{resp.status_code}: {resp.text[:200]}"
            )
            if probe.template.startswith("/v1/admin/"):
                assert resp.status_code == 403, where  # members: every admin route
            elif "{" in probe.template:
                # Alice's objects, project-shared ones included: as if missing.
                assert resp.status_code == 404, where
            else:
                assert resp.status_code < 500, where
            for secret in world.secrets_of_alice:
                assert secret not in resp.text, where
            checked += 1
            varied += probe.params is not None
            seen.add((probe.method, probe.template))
        assert checked >= 20
        # Routes whose refusal matters most are named, so one dropped from the schema
        # (and with it from this matrix) fails here.
        must = {(m, "/v1/admin/mcp-servers") for m in ("GET", "PUT", "DELETE")}
        assert must <= seen, must - seen
        assert varied >= 5  # ?all=true, ?user=, ?project=, ?session=, ?parent= at least
        # Alice's things are untouched and still hers.
        alice = client_for(world.url, world.alice)
        assert alice.get(f"/v1/sessions/{world.ids['session_id']}").status_code == 200
        with session_factory() as db:
            job = db.get(Job, uuid.UUID(world.ids["job_id"]))
            assert job is not None and not job.cancel_requested
        assert alice.get(f"/v1/jobs/{world.ids['job_id']}/artifacts").json()["items"]

    def test_a_project_member_reads_alices_project_objects_but_changes_none(
        self, world: World, session_factory: sessionmaker[Session]
    ) -> None:
        carol = client_for(world.url, world.carol)
        read = 0
        for probe in probes(_document(world), world.ids):
            if "{" not in probe.template or probe.template.startswith("/v1/admin/"):
                continue
            if probe.template.endswith("/events"):
                # A live stream (the job is queued): the status is all we read.
                with carol.stream("GET", probe.path) as stream:
                    assert stream.status_code == 200, probe.template
                read += 1
                continue
            resp = send(carol, probe)
            where = f"{probe.method} {probe.template} -> {resp.status_code}: {resp.text[:200]}"
            if probe.method == "GET":
                assert resp.status_code in (200, 404), where
                read += resp.status_code == 200
            else:
                # Seen but not hers to change (403), or not hers to add turns to (404).
                assert resp.status_code in (403, 404), where
        # The job, its steps, events, artifacts, trace, the session and its messages.
        assert read >= 6
        alice = client_for(world.url, world.alice)
        session = alice.get(f"/v1/sessions/{world.ids['session_id']}")
        assert session.status_code == 200 and session.json()["title"] in world.secrets_of_alice
        with session_factory() as db:
            job = db.get(Job, uuid.UUID(world.ids["job_id"]))
            assert job is not None and not job.cancel_requested

    def test_a_key_scoped_to_another_project_sees_none_of_it(
        self, world: World, session_factory: sessionmaker[Session]
    ) -> None:
        elsewhere = make_project(session_factory, world.alice)
        with transaction(session_factory) as db:
            alice = db.get(User, world.alice.id)
            assert alice is not None
            home = db.get(Project, uuid.UUID(world.ids["project_id"]))
            away = db.query(Project).filter(Project.name == elsewhere).one()
            _, home_key = create_api_key(db, user=alice, project=home)
            _, away_key = create_api_key(db, user=alice, project=away)
        doc = f"/v1/library/documents/{world.ids['document_id']}"
        job = f"/v1/jobs/{world.ids['job_id']}"
        at_home = httpx.Client(base_url=world.url, headers=_bearer(home_key), timeout=30)
        away_from_home = httpx.Client(base_url=world.url, headers=_bearer(away_key), timeout=30)
        assert at_home.get(doc).status_code == 200
        assert at_home.get(job).status_code == 200
        listed = at_home.get("/v1/library/documents").json()["items"]
        assert world.ids["document_id"] in [d["id"] for d in listed]
        assert away_from_home.get(doc).status_code == 404
        assert away_from_home.get(job).status_code == 404
        listed = away_from_home.get("/v1/library/documents").json()["items"]
        assert world.ids["document_id"] not in [d["id"] for d in listed]
        # Every route that reads one of Alice's home-project objects by id, the
        # document's references, PDF and events included: as if missing.
        checked = 0
        for probe in probes(_document(world), world.ids):
            if probe.method != "GET" or "{" not in probe.template:
                continue
            if probe.template.startswith("/v1/admin/"):
                continue  # admin only (a scoped key never passes): the matrix above
            with away_from_home.stream("GET", probe.path) as resp:
                where = f"GET {probe.template} -> {resp.status_code}"
                assert resp.status_code == 404, where
                body = resp.read().decode()
            for secret in world.secrets_of_alice:
                assert secret not in body, where
            checked += 1
        assert checked >= 8  # jobs, sessions, traces, library documents and their parts

    def test_nobody_else_reads_or_changes_alices_notifications_or_settings(
        self, world: World
    ) -> None:
        bob, carol = client_for(world.url, world.bob), client_for(world.url, world.carol)
        alice = client_for(world.url, world.alice)
        project = {"project": world.ids["project_id"]}
        for other in (bob, carol):
            assert other.get("/v1/notifications").json() == {"items": [], "unread": 0}
            assert other.post("/v1/notifications/read", json={"all": True}).json()["marked"] == 0
            assert other.put("/v1/notifications/settings", json={"email": False}).status_code == 200
        assert alice.get("/v1/notifications").json()["unread"] == 1
        assert alice.get("/v1/notifications/settings").json()["email"] is True
        # Bob is no member: as if missing; Carol (a member) reads, only an owner changes.
        assert bob.get("/v1/notifications/settings", params=project).status_code == 404
        changed = bob.put("/v1/notifications/settings", params=project, json={"email": False})
        assert changed.status_code == 404
        assert carol.get("/v1/notifications/settings", params=project).json()["email"] is True
        changed = carol.put("/v1/notifications/settings", params=project, json={"email": False})
        assert changed.status_code == 403
        kept = alice.get("/v1/notifications/settings", params=project).json()
        assert (kept["email"], kept["events"], kept["recipients"]) == (
            True,
            ["job.failed"],
            "members",
        )

    def test_every_non_public_route_refuses_a_missing_or_bad_key(self, world: World) -> None:
        anonymous = httpx.Client(base_url=world.url, timeout=30)
        forged = httpx.Client(
            base_url=world.url, headers={"Authorization": "Bearer lf_forged"}, timeout=30
        )
        for probe in probes(_document(world), world.ids):
            if (probe.method, probe.template) in PUBLIC_ROUTES:
                continue
            for client in (anonymous, forged):
                resp = send(client, probe)
                where = f"{probe.method} {probe.template} -> {resp.status_code}"
                assert resp.status_code == 401, where
                assert resp.json()["error"]["code"] == "unauthorized", where


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
