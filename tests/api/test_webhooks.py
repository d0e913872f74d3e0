"""Webhooks: signed notifications when a job ends, from a durable outbox.

A real API, worker and simulator; a real HTTP receiver on loopback (allowed by
``LEAFLAB_WEBHOOK_ALLOW``, as the guard refuses loopback otherwise). What a
receiver sees: one notification per job end, signed with the webhook's secret,
retried with the same delivery id until it answers 2xx. The outbox row is
written in the transaction that changes the job's status, so a rolled-back
change notifies nobody and a committed one is sent even if no worker was up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Job, WebhookDelivery
from services.common.webhook_signature import DELIVERY_HEADER, SIGNATURE_HEADER, verify
from tests.fixtures.builders import client_for, make_project, make_user, queued_jobs, wait_job
from tests.fixtures.processes import Services

SECRET = "s3cret-for-the-receiver-0123456789"


@dataclass
class Receiver:
    port: int
    fail_first: int = 0
    seen: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def answered_ok(self) -> list[tuple[dict[str, str], bytes, int]]:
        return [s for s in self.seen if s[2] == 204]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            code = 500 if len(state.seen) < state.fail_first else 204
            state.seen.append(({k.lower(): v for k, v in self.headers.items()}, body, code))
            self.send_response(code)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _until(check: object, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


class TestWebhookApi:
    def test_bad_input_gets_clear_errors_and_nothing_is_stored(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice, bob = make_user(session_factory), make_user(session_factory)
        client = client_for(url, alice)
        bad = [
            ({"url": "ftp://example.org/x"}, "invalid_url"),
            ({"url": "http://"}, "invalid_url"),
            ({"url": "http://example.org/" + "a" * 3000}, None),
            ({"url": "http://example.org/h", "events": ["job.exploded"]}, None),
            ({"url": "http://example.org/h", "events": []}, None),
            ({"url": "http://example.org/h", "secret": "short"}, None),
            ({"url": "http://example.org/h", "surprise": 1}, None),
        ]
        for body, code in bad:
            resp = client.post("/v1/webhooks", json=body)
            assert resp.status_code == 422, (body, resp.text)
            if code:
                assert resp.json()["error"]["code"] == code
        project = make_project(session_factory, bob)  # Alice is not a member
        resp = client.post("/v1/webhooks", json={"url": "http://example.org/h", "project": project})
        assert resp.status_code == 404
        assert client.get("/v1/webhooks").json() == {"items": []}
        # Bob's webhook is neither listed for Alice nor removable by her.
        made = client_for(url, bob).post("/v1/webhooks", json={"url": "http://example.org/b"})
        assert made.status_code == 201
        assert len(made.json()["secret"]) >= 16  # generated, shown once
        assert "secret" not in client_for(url, bob).get("/v1/webhooks").json()["items"][0]
        assert client.delete(f"/v1/webhooks/{made.json()['id']}").status_code == 404
        assert client.get(f"/v1/webhooks/{uuid.uuid4()}/deliveries").status_code == 404


class TestOutbox:
    def test_a_rolled_back_status_change_notifies_nobody_and_a_committed_one_is_queued(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice = make_user(session_factory)
        made = client_for(url, alice).post(
            "/v1/webhooks", json={"url": "http://example.org/h", "events": ["job.failed"]}
        )
        hook = made.json()["id"]
        (job_id,) = queued_jobs(session_factory, alice.id, 1)
        with session_factory() as db:
            db.execute(update(Job).where(Job.id == job_id).values(status="failed"))
            db.rollback()
        with session_factory() as db, db.begin():
            db.execute(update(Job).where(Job.id == job_id).values(status="succeeded"))
        with session_factory() as db:
            # Not an event this webhook asked for; nothing was rolled back into the outbox.
            assert (
                db.scalars(select(WebhookDelivery).where(WebhookDelivery.job_id == job_id)).all()
                == []
            )
        with session_factory() as db, db.begin():
            db.execute(update(Job).where(Job.id == job_id).values(status="failed"))
        with session_factory() as db:
            rows = db.scalars(select(WebhookDelivery).where(WebhookDelivery.job_id == job_id)).all()
            assert [(str(r.webhook_id), r.event, r.status) for r in rows] == [
                (hook, "job.failed", "pending")
            ]
            assert rows[0].body["job"]["id"] == str(job_id)
            db.execute(text("DELETE FROM webhook_deliveries WHERE job_id = :j"), {"j": job_id})
            db.commit()


class TestDelivery:
    def test_a_finished_job_is_delivered_signed_and_retried_with_one_delivery_id(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        receiver: Receiver,
    ) -> None:
        receiver.fail_first = 2
        services.env.update(
            {
                "LEAFLAB_REDIS_URL": isolated_redis_url,
                "LEAFLAB_WEBHOOK_ALLOW": f"127.0.0.1:{receiver.port}",
                "LEAFLAB_WEBHOOK_POLL_S": "0.2",
                "LEAFLAB_WEBHOOK_BACKOFF_BASE_S": "0.3",
            }
        )
        services.simulator(script={"latency_ms": 10, "replies": [{"content": "done"}]})
        url = services.api()
        alice, bob = make_user(session_factory), make_user(session_factory)
        client = client_for(url, alice)
        made = client.post(
            "/v1/webhooks",
            json={"url": receiver.url, "secret": SECRET, "events": ["job.succeeded"]},
        )
        assert made.status_code == 201, made.text
        hook = made.json()["id"]
        bobs = client_for(url, bob).post("/v1/webhooks", json={"url": receiver.url}).json()
        # Queued before any worker runs; the worker that runs it also delivers.
        job = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "hello"}})
        assert job.status_code == 202, job.text
        job_id = job.json()["id"]
        services.worker()
        assert wait_job(client, job_id, timeout_s=120)["status"] == "succeeded"
        _until(lambda: receiver.answered_ok())
        time.sleep(1.0)  # nothing more may arrive
        assert len(receiver.seen) == 3
        ids = {headers[DELIVERY_HEADER.lower()] for headers, _, _ in receiver.seen}
        assert len(ids) == 1  # every retry carries the receiver's dedup id
        for headers, body, _ in receiver.seen:
            assert verify(SECRET, body, headers[SIGNATURE_HEADER.lower()])
            assert not verify("another-secret-entirely-xx", body, headers[SIGNATURE_HEADER.lower()])
        payload = json.loads(receiver.seen[-1][1])
        assert payload["event"] == "job.succeeded"
        assert payload["job"]["id"] == job_id and payload["job"]["status"] == "succeeded"
        assert payload["id"] == ids.pop()
        deliveries = client.get(f"/v1/webhooks/{hook}/deliveries").json()["items"]
        assert [(d["status"], d["attempts"], d["last_status"]) for d in deliveries] == [
            ("delivered", 3, 204)
        ]
        listed = client.get("/v1/webhooks").json()["items"]
        assert [(h["id"], h["delivered"], h["pending"]) for h in listed] == [(hook, 1, 0)]
        # Bob's webhook heard nothing of Alice's job.
        assert (
            client_for(url, bob).get(f"/v1/webhooks/{bobs['id']}/deliveries").json()["items"] == []
        )

    def test_a_receiver_that_never_answers_is_marked_failed_after_the_last_attempt(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        receiver: Receiver,
    ) -> None:
        receiver.fail_first = 10**6
        services.env.update(
            {
                "LEAFLAB_REDIS_URL": isolated_redis_url,
                "LEAFLAB_WEBHOOK_ALLOW": f"127.0.0.1:{receiver.port}",
                "LEAFLAB_WEBHOOK_POLL_S": "0.2",
                "LEAFLAB_WEBHOOK_BACKOFF_BASE_S": "0.1",
                "LEAFLAB_WEBHOOK_MAX_ATTEMPTS": "3",
            }
        )
        services.simulator(script={"latency_ms": 10, "replies": [{"content": "done"}]})
        url = services.api()
        alice = make_user(session_factory)
        client = client_for(url, alice)
        hook = client.post("/v1/webhooks", json={"url": receiver.url}).json()["id"]
        # A second webhook at a loopback port nobody allowed: the guard refuses it.
        blocked = client.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x"}).json()["id"]
        services.worker()
        job_id = client.post("/v1/jobs", json={"kind": "turn", "input": {"content": "hi"}}).json()[
            "id"
        ]
        assert wait_job(client, job_id, timeout_s=120)["status"] == "succeeded"

        def settled() -> bool:
            states = [
                d["status"]
                for h in (hook, blocked)
                for d in client.get(f"/v1/webhooks/{h}/deliveries").json()["items"]
            ]
            return states == ["failed", "failed"]

        _until(settled)
        assert len(receiver.seen) == 3
        (refused,) = client.get(f"/v1/webhooks/{blocked}/deliveries").json()["items"]
        assert refused["last_status"] is None
        assert refused["last_error"].startswith("address refused")


class TestCli:
    def test_add_list_deliveries_rm_and_a_bad_url(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice = make_user(session_factory)

        def leaflab(*args: str) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "LEAFLAB_URL": url, "LEAFLAB_API_KEY": alice.key}
            argv = [sys.executable, "-m", "services.cli.main", "webhooks", *args]
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

        added = leaflab("add", "https://hooks.example.org/lab", "--event", "job.failed")
        assert added.returncode == 0, added.stderr
        assert "secret (shown only now):" in added.stdout
        hook = added.stdout.split()[1]
        listed = leaflab("list")
        assert hook in listed.stdout and "job.failed" in listed.stdout
        assert "delivered 0, pending 0, failed 0" in listed.stdout
        assert leaflab("deliveries", hook).stdout.strip() == "no deliveries yet"
        bad = leaflab("add", "file:///etc/passwd")
        assert bad.returncode != 0 and "invalid_url" in bad.stderr
        wrong = leaflab("add", "https://x.example.org", "--event", "job.exploded")
        assert wrong.returncode == 2 and "job.exploded" in wrong.stderr
        assert leaflab("rm", hook).returncode == 0
        assert leaflab("list").stdout.strip() == "no webhooks"
