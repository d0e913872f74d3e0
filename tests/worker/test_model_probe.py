"""The model-wait watcher against real HTTP endpoints and real Postgres rows.

However many jobs wait on one endpoint, a check asks it once (``GET /models``);
a 503 keeps them parked, an answer re-queues them all; a hung endpoint costs at
most the probe timeout; a job past the outage limit, or with a cancel pending,
is re-queued whatever its endpoint says (its worker ends it)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.settings import get_settings
from services.worker.spine.model_probe import check_once, probe_endpoint
from tests.fixtures.builders import make_user, queued_jobs
from tests.fixtures.dead_servers import black_hole, closed_port


class Endpoint:
    """A model server that answers ``GET /v1/models`` with ``status`` and counts asks."""

    def __init__(self) -> None:
        self.status = 503
        self.asked = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.asked += self.path == "/v1/models"
                self.send_response(outer.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _park(factory: sessionmaker[Session], ids: list[uuid.UUID], url: str, ago_s: float) -> None:
    wait = {"endpoints": [{"profile": "default", "base_url": url}], "last_error": "down"}
    with factory() as db, db.begin():
        db.execute(
            text(
                "UPDATE jobs SET status = 'waiting_model', model_wait = CAST(:w AS jsonb), "
                "model_wait_since = now() - make_interval(secs => :ago) WHERE id = ANY(:ids)"
            ),
            {"w": json.dumps(wait), "ago": ago_s, "ids": ids},
        )


def _status(factory: sessionmaker[Session], ids: list[uuid.UUID]) -> list[str]:
    with factory() as db:
        rows: dict[uuid.UUID, str] = dict(
            db.execute(text("SELECT id, status FROM jobs WHERE id = ANY(:ids)"), {"ids": ids}).all()
        )
    return [rows[i] for i in ids]


def test_one_probe_per_endpoint_and_all_resume_when_it_answers(
    session_factory: sessionmaker[Session], endpoint: Endpoint, isolated_redis_url: str
) -> None:
    celery = build_celery(get_settings().model_copy(update={"redis_url": isolated_redis_url}))
    jobs = queued_jobs(session_factory, make_user(session_factory).id, 5)
    _park(session_factory, jobs, endpoint.url, ago_s=1)
    assert not set(jobs) & set(
        check_once(session_factory, celery, None, outage_max_s=3600, timeout_s=2)
    )
    assert endpoint.asked == 1  # five jobs, one endpoint: one probe
    assert _status(session_factory, jobs) == ["waiting_model"] * 5
    endpoint.status = 200
    resumed = check_once(session_factory, celery, None, outage_max_s=3600, timeout_s=2)
    assert endpoint.asked == 2
    assert set(jobs) <= set(resumed)
    assert _status(session_factory, jobs) == ["queued"] * 5


def test_past_the_limit_or_cancelled_jobs_go_back_whatever_the_endpoint(
    session_factory: sessionmaker[Session], isolated_redis_url: str
) -> None:
    celery = build_celery(get_settings().model_copy(update={"redis_url": isolated_redis_url}))
    down = f"http://127.0.0.1:{closed_port()}/v1"
    fresh, old, cancelled = queued_jobs(session_factory, make_user(session_factory).id, 3)
    _park(session_factory, [fresh, cancelled], down, ago_s=1)
    _park(session_factory, [old], down, ago_s=120)
    with session_factory() as db, db.begin():
        db.execute(
            text("UPDATE jobs SET cancel_requested = true WHERE id = :id"), {"id": cancelled}
        )
    resumed = check_once(session_factory, celery, None, outage_max_s=60, timeout_s=1)
    assert old in resumed and cancelled in resumed and fresh not in resumed
    assert _status(session_factory, [fresh, old, cancelled]) == [
        "waiting_model",
        "queued",
        "queued",
    ]


def test_a_hung_endpoint_costs_at_most_the_probe_timeout() -> None:
    with black_hole() as port:
        started = time.monotonic()
        assert probe_endpoint(f"http://127.0.0.1:{port}/v1", 0.5) is False
        assert time.monotonic() - started < 2
    assert probe_endpoint(f"http://127.0.0.1:{closed_port()}/v1", 0.5) is False
