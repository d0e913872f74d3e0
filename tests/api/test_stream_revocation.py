"""An open event stream ends when its reader's access ends, whatever the stream is.

A real API process (re-checking every 0.3 s, pinging every 1 s) and a real HTTP
client reading the stream in a thread. Events keep arriving in the stream's
Redis key the whole time (a live job or ingestion, as far as the API can tell);
then the key is revoked or expires, the user is disabled, the browser session
logs out or the reader is removed from the project, and the stream must end
with one ``access_revoked`` event — not keep delivering.

Jobs and documents are made as rows only (no Celery message), so no worker of
another test picks them up and ends their streams first.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.api.web.session_store import WebSessions
from services.cli.client import parse_sse
from services.common.contracts.collections import Collection
from services.common.db import transaction
from services.common.events import EventPublisher
from services.common.models import ApiKey, Document, Project, User
from services.common.turns import JobOrigin, create_queued_job
from services.library.progress import DocumentProgress
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_project, make_user
from tests.fixtures.processes import Services

CHECK_S = 0.3
ENDS_WITHIN_S = 5.0  # several checks and pings: a stream still open after this leaks


@dataclass
class Api:
    url: str
    admin: httpx.Client
    redis: redis.Redis


@pytest.fixture(scope="module")
def api(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
) -> Iterator[Api]:
    svc = Services(stack, tmp_path_factory.mktemp("revocation"))
    svc.env.update({"LEAFLAB_SSE_PING_S": "1", "LEAFLAB_SSE_ACCESS_CHECK_S": str(CHECK_S)})
    try:
        url = svc.api()
        admin = client_for(url, make_user(session_factory, admin=True))
        yield Api(url, admin, redis.Redis.from_url(stack.redis_url))
    finally:
        svc.stop()


@dataclass
class Reader:
    """Reads one SSE stream in a thread; ``events`` as parsed, ``done`` once it ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    status: int | None = None

    def start(self, client: httpx.Client, path: str) -> Reader:
        threading.Thread(target=self._read, args=(client, path), daemon=True).start()
        return self

    def _read(self, client: httpx.Client, path: str) -> None:
        try:
            with client.stream("GET", path, timeout=httpx.Timeout(30, read=20)) as resp:
                self.status = resp.status_code
                for event in parse_sse(resp.iter_lines()):
                    self.events.append(event)
        except httpx.HTTPError:
            pass
        finally:
            self.done.set()

    def seen(self, kind: str) -> int:
        return sum(1 for e in self.events if e.get("event") == kind)


def _job(factory: sessionmaker[Session], owner: uuid.UUID, project: str | None = None) -> str:
    with transaction(factory) as db:
        project_id = None
        if project is not None:
            project_id = db.query(Project).filter(Project.name == project).one().id
        job = create_queued_job(
            db,
            origin=JobOrigin(user_id=owner, project_id=project_id),
            kind="turn",
            job_input={"content": "a long-running job"},
            session=None,
            max_turns=3,
        )
        return str(job.id)


def _follow_until_refused(
    api: Api,
    reader_client: httpx.Client,
    path: str,
    publish: Callable[[int], None],
    revoke: Callable[[], None],
    event: str = "progress",
) -> Reader:
    """Open the stream, see it deliver ``event`` across several checks, revoke, and
    keep publishing until the stream ends (or ENDS_WITHIN_S passes)."""
    reader = Reader().start(reader_client, path)
    n = 0
    deadline = time.monotonic() + 10
    while reader.seen(event) < 3 and time.monotonic() < deadline:
        publish(n := n + 1)
        time.sleep(0.1)
    time.sleep(CHECK_S * 4)  # several re-checks pass while access holds
    publish(n := n + 1)
    assert not reader.done.is_set() and reader.status == 200, reader.events
    assert reader.seen(event) >= 3 and reader.seen("access_revoked") == 0
    revoke()
    revoked_at = time.monotonic()
    while not reader.done.is_set() and time.monotonic() - revoked_at < ENDS_WITHIN_S:
        publish(n := n + 1)
        time.sleep(0.1)
    assert reader.done.wait(1), f"still streaming {ENDS_WITHIN_S} s after the revocation"
    return reader


def _assert_refused(reader: Reader, reason: str) -> None:
    last = reader.events[-1]
    assert last["event"] == "access_revoked", reader.events[-3:]
    assert last["data"]["error"] == "access revoked"
    assert reason in last["data"]["reason"], last["data"]
    assert reader.seen("access_revoked") == 1


def _job_publisher(api: Api, job_id: str) -> Callable[[int], None]:
    events = EventPublisher(api.redis)
    return lambda n: events.publish(job_id, "progress", {"n": n})


def _key_id(factory: sessionmaker[Session], user: TestUser) -> uuid.UUID:
    with factory() as db:
        return db.query(ApiKey).filter(ApiKey.user_id == user.id).one().id


class TestJobStreams:
    def test_a_revoked_key_ends_the_stream(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _job(session_factory, user.id)
        key_id = _key_id(session_factory, user)

        def revoke() -> None:
            resp = api.admin.delete(f"/v1/admin/users/{user.id}/keys/{key_id}")
            assert resp.status_code == 204, resp.text

        reader = _follow_until_refused(
            api,
            client_for(api.url, user),
            f"/v1/jobs/{job_id}/events",
            _job_publisher(api, job_id),
            revoke,
        )
        _assert_refused(reader, "revoked")

    def test_an_expired_key_ends_the_stream(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _job(session_factory, user.id)

        def expire() -> None:
            with transaction(session_factory) as db:
                db.execute(
                    update(ApiKey)
                    .where(ApiKey.user_id == user.id)
                    .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
                )

        reader = _follow_until_refused(
            api,
            client_for(api.url, user),
            f"/v1/jobs/{job_id}/events",
            _job_publisher(api, job_id),
            expire,
        )
        _assert_refused(reader, "expired")

    def test_a_disabled_user_is_cut_off(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _job(session_factory, user.id)

        def disable() -> None:
            with transaction(session_factory) as db:
                db.execute(update(User).where(User.id == user.id).values(disabled=True))

        reader = _follow_until_refused(
            api,
            client_for(api.url, user),
            f"/v1/jobs/{job_id}/events",
            _job_publisher(api, job_id),
            disable,
        )
        _assert_refused(reader, "disabled")

    def test_a_member_removed_from_the_project_stops_reading_its_job(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        owner, member = make_user(session_factory), make_user(session_factory)
        project = make_project(session_factory, owner, member)
        job_id = _job(session_factory, owner.id, project)
        with session_factory() as db:
            project_id = db.query(Project).filter(Project.name == project).one().id

        def remove() -> None:
            resp = api.admin.delete(f"/v1/admin/projects/{project_id}/members/{member.id}")
            assert resp.status_code == 204, resp.text

        reader = _follow_until_refused(
            api,
            client_for(api.url, member),
            f"/v1/jobs/{job_id}/events",
            _job_publisher(api, job_id),
            remove,
        )
        _assert_refused(reader, "not found")
        # The owner still reads it.
        assert client_for(api.url, owner).get(f"/v1/jobs/{job_id}").status_code == 200

    def test_logging_out_ends_the_browser_sessions_stream(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        job_id = _job(session_factory, user.id)
        token, session = WebSessions(api.redis, ttl_s=600).create(_key_id(session_factory, user))
        browser = httpx.Client(base_url=api.url, cookies={"leaflab_session": token}, timeout=30)

        def logout() -> None:
            resp = browser.post("/logout", data={"csrf_token": session.csrf})
            assert resp.status_code == 303, resp.text

        reader = _follow_until_refused(
            api, browser, f"/v1/jobs/{job_id}/events", _job_publisher(api, job_id), logout
        )
        _assert_refused(reader, "API key")  # no session, no key: the 401 message


class TestDocumentStreams:
    def test_a_revoked_key_ends_the_document_stream(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        with transaction(session_factory) as db:
            doc = Document(
                collection=Collection.personal(user.id),
                owner_id=user.id,
                content_hash=uuid.uuid4().hex * 2,
                filename="paper.pdf",
            )
            db.add(doc)
            db.flush()
            doc_id = str(doc.id)
        key_id = _key_id(session_factory, user)

        progress = DocumentProgress(api.redis, doc_id)  # the route relays contract events only

        def publish(n: int) -> None:
            progress.publish(
                "document.batch", {"done": n, "total": 999, "embedded": n, "reused": 0}
            )

        def revoke() -> None:
            resp = api.admin.delete(f"/v1/admin/users/{user.id}/keys/{key_id}")
            assert resp.status_code == 204, resp.text

        reader = _follow_until_refused(
            api,
            client_for(api.url, user),
            f"/v1/library/documents/{doc_id}/events",
            publish,
            revoke,
            event="document.batch",
        )
        _assert_refused(reader, "revoked")
