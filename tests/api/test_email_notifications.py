"""E-mail when a job ends: a real SMTP server on loopback (aiosmtpd), a real API,
worker and simulator. What a recipient sees: one e-mail per job end, to the right
people by their settings, with the job's link and cost, a Message-ID that names
the delivery, and no header a job's title could inject. The outbox row is written
with the status change, so an SMTP server that is down only delays the e-mail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from email.header import decode_header, make_header

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import EmailDelivery, Job, ProjectMember
from tests.fixtures.builders import (
    TestUser,
    client_for,
    make_project,
    make_user,
    queued_jobs,
    wait_job,
)
from tests.fixtures.processes import Services
from tests.fixtures.smtp import Received, SmtpServer, smtp_server  # noqa: F401 - a fixture

PUBLIC = "https://leaflab.lab.example.org"


def _subject(received: Received) -> str:
    """The Subject as a mail client shows it: decoded and unfolded (RFC 5322 2.2.3)."""
    folded = str(make_header(decode_header(received.message["Subject"])))
    return re.sub(r"\r?\n(?=[ \t])", "", folded)


def _end_job(
    factory: sessionmaker[Session], user: TestUser, *, title: str, project: str | None = None
) -> uuid.UUID:
    """A job of ``user`` that ends (succeeds) without a model: the trigger sees the same change."""
    (job_id,) = queued_jobs(factory, user.id, 1)
    with factory() as db, db.begin():
        values: dict[str, object] = {"status": "succeeded", "input": {"content": title}}
        if project:
            values["project_id"] = db.scalar(
                text("SELECT id FROM projects WHERE name = :n"), {"n": project}
            )
        db.execute(update(Job).where(Job.id == job_id).values(cost_usd=0.0123, **values))
    return job_id


def _deliveries(factory: sessionmaker[Session], job_id: uuid.UUID) -> list[EmailDelivery]:
    with factory() as db:
        return list(db.scalars(select(EmailDelivery).where(EmailDelivery.job_id == job_id)))


def _until(check: object, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


class TestEmail:
    def test_a_succeeded_job_emails_its_owner_once_with_its_link(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        smtp_server: SmtpServer,  # noqa: F811
    ) -> None:
        services.env.update({"LEAFLAB_REDIS_URL": isolated_redis_url, **smtp_server.env()})
        services.simulator(script={"latency_ms": 10, "replies": [{"content": "done"}]})
        url = services.api()
        alice, bob = make_user(session_factory), make_user(session_factory)
        smtp_server.watch(alice.email, bob.email)
        client = client_for(url, alice)
        job = client.post(
            "/v1/jobs", json={"kind": "turn", "input": {"content": "summarise ferns"}}
        )
        assert job.status_code == 202, job.text
        job_id = job.json()["id"]
        services.worker()
        assert wait_job(client, job_id, timeout_s=120)["status"] == "succeeded"
        (mail,) = smtp_server.wait_for(1)
        time.sleep(1.5)  # nothing more may arrive
        assert len(smtp_server.received) == 1
        assert mail.rcpt_tos == [alice.email]
        assert mail.mail_from == "leaflab@lab.example.org"
        msg = mail.message
        assert msg["To"] == alice.email
        assert _subject(mail) == "[Leaflab] turn succeeded: summarise ferns"
        body = msg.get_payload(decode=True).decode()
        assert f"{PUBLIC}/jobs/{job_id}" in body
        assert "Cost:   $" in body and "Status: succeeded" in body
        assert alice.key not in mail.raw.decode()
        (delivery,) = _deliveries(session_factory, uuid.UUID(job_id))
        assert delivery.status == "sent" and delivery.attempts == 1
        assert msg["Message-ID"] == f"<leaflab-{delivery.id}@lab.example.org>"
        # In the app too: one unread notification for Alice, none for Bob.
        mine = client.get("/v1/notifications").json()
        assert mine["unread"] == 1
        assert [(n["job_id"], n["event"], n["title"]) for n in mine["items"]] == [
            (job_id, "job.succeeded", "summarise ferns")
        ]
        assert client_for(url, bob).get("/v1/notifications").json() == {"items": [], "unread": 0}

    def test_an_smtp_server_that_is_down_gets_the_email_when_it_comes_back(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        smtp_server: SmtpServer,  # noqa: F811
    ) -> None:
        smtp_server.stop()
        services.env.update({"LEAFLAB_REDIS_URL": isolated_redis_url, **smtp_server.env()})
        alice = make_user(session_factory)
        smtp_server.watch(alice.email)
        job_id = _end_job(session_factory, alice, title="while the mail server is down")
        services.worker()
        _until(lambda: any(d.attempts >= 2 for d in _deliveries(session_factory, job_id)))
        (waiting,) = _deliveries(session_factory, job_id)
        assert waiting.status == "pending" and "Connection" in (waiting.last_error or "")
        smtp_server.start()
        (mail,) = smtp_server.wait_for(1)
        _until(lambda: _deliveries(session_factory, job_id)[0].status == "sent")
        time.sleep(1.0)
        assert len(smtp_server.received) == 1
        assert mail.rcpt_tos == [alice.email]
        assert mail.message["Message-ID"] == f"<leaflab-{waiting.id}@lab.example.org>"

    def test_settings_choose_who_gets_email(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        smtp_server: SmtpServer,  # noqa: F811
    ) -> None:
        """Alice turned e-mail off; her project e-mails every member: Carol gets it, she
        does not. Dave's own settings leave out job.succeeded: his success e-mails nobody."""
        services.env.update({"LEAFLAB_REDIS_URL": isolated_redis_url, **smtp_server.env()})
        url = services.api()
        alice, carol, dave = (make_user(session_factory) for _ in range(3))
        smtp_server.watch(alice.email, carol.email, dave.email)
        project = make_project(session_factory, alice, carol)
        with session_factory() as db, db.begin():
            db.execute(
                update(ProjectMember).where(ProjectMember.user_id == alice.id).values(role="owner")
            )
        a = client_for(url, alice)
        assert a.put("/v1/notifications/settings", json={"email": False}).status_code == 200
        resp = a.put(
            "/v1/notifications/settings",
            params={"project": project},
            json={"email": True, "events": ["job.succeeded"], "recipients": "members"},
        )
        assert resp.status_code == 200, resp.text
        d = client_for(url, dave)
        assert d.put("/v1/notifications/settings", json={"events": ["job.failed"]}).json()[
            "events"
        ] == ["job.failed"]
        alices = _end_job(session_factory, alice, title="project job", project=project)
        daves = _end_job(session_factory, dave, title="dave's job")
        services.worker()
        (mail,) = smtp_server.wait_for(1)
        time.sleep(2.0)  # Alice's, or Dave's, would have come by now
        assert len(smtp_server.received) == 1
        assert mail.rcpt_tos == [carol.email]
        assert f"{PUBLIC}/jobs/{alices}" in mail.message.get_payload(decode=True).decode()
        assert [d.to_address for d in _deliveries(session_factory, alices)] == [carol.email]
        assert _deliveries(session_factory, daves) == []
        # Alice still hears in the app (e-mail off is e-mail only); Dave does not (events).
        assert a.get("/v1/notifications").json()["unread"] == 1
        assert d.get("/v1/notifications").json()["unread"] == 0

    def test_a_title_with_line_breaks_creates_no_header(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        smtp_server: SmtpServer,  # noqa: F811
    ) -> None:
        services.env.update({"LEAFLAB_REDIS_URL": isolated_redis_url, **smtp_server.env()})
        alice = make_user(session_factory)
        smtp_server.watch(alice.email, "evil@attacker.example")
        title = "ferns\r\nBcc: evil@attacker.example\r\nX-Injected: yes\n\nbody?"
        _end_job(session_factory, alice, title=title)
        services.worker()
        (mail,) = smtp_server.wait_for(1)
        msg = mail.message
        assert mail.rcpt_tos == [alice.email]
        assert msg["Bcc"] is None and msg["X-Injected"] is None
        assert len(msg.get_all("Subject")) == 1
        head = mail.raw.split(b"\r\n\r\n", 1)[0].decode()
        assert not re.search(r"(?im)^(bcc|x-injected):", head), head
        assert (
            _subject(mail)
            == "[Leaflab] turn succeeded: ferns Bcc: evil@attacker.example X-Injected: yes body?"
        )


class TestWithoutSmtp:
    def test_no_smtp_host_skips_the_email_and_says_so_once(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
    ) -> None:
        services.env.update({"LEAFLAB_REDIS_URL": isolated_redis_url, "LEAFLAB_SMTP_POLL_S": "0.2"})
        services.env.pop("LEAFLAB_SMTP_HOST", None)
        alice = make_user(session_factory)
        job_id = _end_job(session_factory, alice, title="no mail server")
        worker = services.worker()
        _until(lambda: _deliveries(session_factory, job_id)[0].status == "skipped")
        time.sleep(1.0)
        assert worker.log().count("e-mail notifications are off: LEAFLAB_SMTP_HOST is not set") == 1


class TestSettingsApi:
    def test_bad_input_and_other_peoples_settings(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice, bob, carol = (make_user(session_factory) for _ in range(3))
        project = make_project(session_factory, alice, carol)
        a, b, c = (client_for(url, u) for u in (alice, bob, carol))
        assert a.get("/v1/notifications/settings").json() == {
            "scope": "user",
            "project_id": None,
            "email": True,
            "events": [
                "job.succeeded",
                "job.failed",
                "job.waiting_approval",
                "job.budget_exhausted",
            ],
            "recipients": None,
            "may_change": True,
        }
        for body in ({"events": ["job.exploded"]}, {"email": "maybe"}, {"surprise": 1}):
            resp = a.put("/v1/notifications/settings", json=body)
            assert resp.status_code == 422, (body, resp.text)
        # Recipients are a project's: one's own settings answer them as null.
        resp = a.put("/v1/notifications/settings", json={"recipients": "members"})
        assert resp.status_code == 200 and resp.json()["recipients"] is None
        assert a.get("/v1/notifications/settings").json()["email"] is True  # nothing stored
        # Bob is no member: the project is as if missing; Carol reads, but may not change.
        assert b.get("/v1/notifications/settings", params={"project": project}).status_code == 404
        assert (
            b.put(
                "/v1/notifications/settings", params={"project": project}, json={"email": True}
            ).status_code
            == 404
        )
        seen = c.get("/v1/notifications/settings", params={"project": project}).json()
        assert (seen["scope"], seen["email"], seen["may_change"]) == ("project", False, False)
        assert (
            c.put(
                "/v1/notifications/settings", params={"project": project}, json={"email": True}
            ).status_code
            == 403
        )
        # Bob's own settings are his: Alice's change is not his.
        assert a.put("/v1/notifications/settings", json={"email": False}).json()["email"] is False
        assert b.get("/v1/notifications/settings").json()["email"] is True
        assert a.post("/v1/notifications/read", json={}).json() == {"marked": 0, "unread": 0}


class TestCli:
    def test_settings_list_and_read(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        url = services.api()
        alice, carol = make_user(session_factory), make_user(session_factory)
        project = make_project(session_factory, alice, carol)

        def leaflab(user: TestUser, *args: str) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "LEAFLAB_URL": url, "LEAFLAB_API_KEY": user.key}
            argv = [sys.executable, "-m", "services.cli.main", "notify", *args]
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

        shown = leaflab(alice, "settings")
        assert shown.returncode == 0, shown.stderr
        assert "e-mail: on" in shown.stdout and "job.budget_exhausted" in shown.stdout
        changed = leaflab(
            alice, "settings", "--email", "off", "--events", "job.failed,job.succeeded"
        )
        assert changed.returncode == 0, changed.stderr
        assert "e-mail: off" in changed.stdout
        assert "events: job.succeeded, job.failed" in changed.stdout
        assert "e-mail: off" in leaflab(alice, "settings").stdout
        wrong = leaflab(alice, "settings", "--events", "job.exploded")
        assert wrong.returncode == 2 and "job.exploded" in wrong.stderr
        refused = leaflab(carol, "settings", "--project", project, "--email", "on")
        assert refused.returncode != 0 and "forbidden" in refused.stderr
        assert "e-mail: off" in leaflab(carol, "settings", "--project", project).stdout
        _end_job(session_factory, alice, title="\x1b]0;pwned\x07 a job")
        listed = leaflab(alice, "list")
        assert listed.returncode == 0, listed.stderr
        assert "1 unread" in listed.stdout and "job.succeeded" in listed.stdout
        assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
        read = leaflab(alice, "read", "--all")
        assert read.stdout.strip() == "marked 1 read; 0 unread"
        assert "0 unread" in leaflab(alice, "list").stdout
