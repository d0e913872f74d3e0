"""Bad input gets a clear 4xx and writes nothing; other users' objects are 404."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, Message
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack


def _counts(factory: sessionmaker[Session]) -> tuple[int, int]:
    with factory() as db:
        jobs = db.scalar(select(func.count()).select_from(Job)) or 0
        messages = db.scalar(select(func.count()).select_from(Message)) or 0
        return int(jobs), int(messages)


def _session_counts(factory: sessionmaker[Session], session_id: str) -> tuple[int, int, str]:
    """One session's jobs, messages and the status of its latest job: what a foreign
    write would change. Scoped, because the shared stack's other jobs write messages
    of their own while this test runs."""
    with factory() as db:
        jobs = db.scalar(select(func.count()).select_from(Job).where(Job.session_id == session_id))
        messages = db.scalar(
            select(func.count()).select_from(Message).where(Message.session_id == session_id)
        )
        status = db.scalar(
            select(Job.status)
            .where(Job.session_id == session_id)
            .order_by(Job.created_at.desc())
            .limit(1)
        )
        return int(jobs or 0), int(messages or 0), str(status)


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()["error"]
    assert body["code"] and body["message"]
    return body


class TestAuth:
    def test_missing_and_invalid_keys_are_401(self, running: RunningStack) -> None:
        assert _error(httpx.get(f"{running.url}/v1/jobs"), 401)["code"] == "unauthorized"
        bad = httpx.get(f"{running.url}/v1/jobs", headers={"Authorization": "Bearer lf_nope"})
        _error(bad, 401)
        basic = httpx.get(f"{running.url}/v1/jobs", headers={"Authorization": "Basic Zm9v"})
        _error(basic, 401)

    def test_non_admin_cannot_use_admin_endpoints(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        _error(client.post("/v1/admin/users", json={"email": "x@y.z"}), 403)

    def test_admin_creates_user_and_key_shown_once(
        self, running: RunningStack, session_factory: sessionmaker[Session], unique: str
    ) -> None:
        admin = client_for(running.url, make_user(session_factory, admin=True))
        user = admin.post("/v1/admin/users", json={"email": f"{unique}@lab.test"})
        assert user.status_code == 201
        key = admin.post(f"/v1/admin/users/{user.json()['id']}/keys", json={"name": "laptop"})
        assert key.status_code == 201 and key.json()["key"].startswith("lf_")
        listed = admin.get(f"/v1/admin/users/{user.json()['id']}/keys").json()["items"]
        assert "key" not in listed[0] and listed[0]["prefix"] == key.json()["key"][:10]
        new_client = httpx.Client(
            base_url=running.url, headers={"Authorization": f"Bearer {key.json()['key']}"}
        )
        assert new_client.get("/v1/jobs").status_code == 200
        admin.delete(f"/v1/admin/users/{user.json()['id']}/keys/{key.json()['id']}")
        _error(new_client.get("/v1/jobs"), 401)
        _error(admin.post("/v1/admin/users", json={"email": f"{unique}@lab.test"}), 409)
        _error(admin.post("/v1/admin/users", json={"email": "not-an-email"}), 422)


class TestBadRequests:
    @pytest.mark.parametrize(
        ("body", "status"),
        [
            (b"{not json", 422),
            (b"[]", 422),
            (b'{"kind": "turn"}', 422),
            (b'{"kind": "nope", "input": {}}', 422),
            (b'{"kind": "turn", "input": {"content": ""}}', 422),
            (b'{"kind": "turn", "input": {"content": "x", "extra": 1}}', 422),
            (b'{"kind": "batch", "input": {"tasks": []}}', 422),
            (b'{"kind": "survey", "input": {"topic": "x"}}', 422),
            (b'{"kind": "turn", "input": {"content": "x"}, "session_id": "nope"}', 404),
            (b'{"kind": "turn", "input": {"content": "x"}, "project": "nope"}', 404),
        ],
    )
    def test_malformed_job_submissions_write_nothing(
        self,
        running: RunningStack,
        session_factory: sessionmaker[Session],
        body: bytes,
        status: int,
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        before = _counts(session_factory)
        resp = client.post("/v1/jobs", content=body, headers={"Content-Type": "application/json"})
        _error(resp, status)
        assert _counts(session_factory) == before

    def test_oversized_message_is_413_and_writes_nothing(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session = client.post("/v1/sessions", json={}).json()
        before = _counts(session_factory)
        big = "x" * 250_000  # over the 200k-character message limit
        _error(client.post(f"/v1/sessions/{session['id']}/messages", json={"content": big}), 413)
        huge = "x" * 3_000_000  # over the 2 MB body limit: refused before it is read
        _error(client.post(f"/v1/sessions/{session['id']}/messages", json={"content": huge}), 413)
        assert _counts(session_factory) == before

    def test_unknown_and_foreign_objects_are_404(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(running.url, make_user(session_factory))
        bob = client_for(running.url, make_user(session_factory))
        session = alice.post("/v1/sessions", json={}).json()
        running.sim.set_script(session["id"], {"replies": [{"content": "mine"}]})
        job_id = alice.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}
        ).json()["job_id"]
        wait_job(alice, job_id)
        for path in (
            f"/v1/jobs/{job_id}",
            f"/v1/jobs/{job_id}/steps",
            f"/v1/jobs/{job_id}/artifacts",
            f"/v1/jobs/{job_id}/events",
            f"/v1/sessions/{session['id']}",
            f"/v1/sessions/{session['id']}/messages",
        ):
            assert _error(bob.get(path), 404)["code"] == "not_found"
        before = _session_counts(session_factory, session["id"])
        _error(bob.post(f"/v1/sessions/{session['id']}/messages", json={"content": "x"}), 404)
        _error(bob.post(f"/v1/jobs/{job_id}/cancel"), 404)
        assert _session_counts(session_factory, session["id"]) == before
        for path in ("/v1/jobs/00000000-0000-0000-0000-000000000000", "/v1/jobs/not-a-uuid"):
            _error(alice.get(path), 404)
        assert bob.get("/v1/jobs").json()["items"] == []
        _error(alice.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": "bad"}), 422)


class TestCancel:
    def test_cancel_running_job_between_steps(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(running.url, make_user(session_factory))
        session = client.post("/v1/sessions", json={}).json()
        slow = {
            "latency_ms": 400,
            "replies": [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}] * 20,
        }
        running.sim.set_script(session["id"], slow)
        job_id = client.post(
            f"/v1/sessions/{session['id']}/messages", json={"content": "go"}
        ).json()["job_id"]
        wait_job(client, job_id, statuses=("running",))
        assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 202
        job = wait_job(client, job_id)
        assert job["status"] == "cancelled"
        _error(client.post(f"/v1/jobs/{job_id}/cancel"), 409)
