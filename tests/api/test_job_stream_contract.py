"""A job's event stream relays only what the job event union accepts.

Outside the test suite a worker that publishes an event breaking the contract
logs it and publishes it anyway (``EventPublisher``, not strict): an older worker
during an upgrade, or a bug. The API's stream is where readers meet it, so it
skips such entries (logged) instead of handing the CLI and the browser a shape
they do not know, and a refused ``final`` does not end the stream.

A real API process and a real HTTP client; the job is a row only (no Celery
message), so no worker of another test touches its stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from services.common.contracts.keys import job_stream
from services.common.events import EventPublisher
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, queued_jobs
from tests.fixtures.processes import Services


@pytest.fixture(scope="module")
def api_url(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    svc = Services(stack, tmp_path_factory.mktemp("job-stream-contract"))
    svc.env.update({"LEAFLAB_SSE_PING_S": "1"})
    try:
        yield svc.api()
    finally:
        svc.stop()


def test_entries_the_contract_refuses_are_skipped_and_a_refused_final_ends_nothing(
    api_url: str, stack: Stack, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    job_id = str(queued_jobs(session_factory, user.id, 1)[0])
    rds = redis.Redis.from_url(stack.redis_url)
    events = EventPublisher(rds)
    events.publish(job_id, "status", {"status": "running"})
    # Written by hand, as a broken or older emitter would: never relayed.
    refused = [
        ("tool_begin", {"name": "python"}),  # unknown type
        ("token", {"text": 5}),  # a declared field of the wrong type
        ("final", {"status": "finished-ish"}),  # a terminal type, refused: not the end
    ]
    for kind, data in refused:
        rds.xadd(job_stream(job_id), {"type": kind, "data": json.dumps(data)})
    rds.xadd(job_stream(job_id), {"type": "token", "data": "{not json"})
    events.publish(job_id, "token", {"text": "Hi"})
    events.publish(job_id, "final", {"status": "succeeded", "result": "Hi"})

    client = client_for(api_url, user)
    with client.stream(
        "GET", f"/v1/jobs/{job_id}/events", timeout=httpx.Timeout(30, read=20)
    ) as resp:
        assert resp.status_code == 200
        got = list(parse_sse(resp.iter_lines()))
    assert [e["event"] for e in got] == ["status", "token", "final"], got
    assert got[1]["data"] == {"text": "Hi"}
    assert got[2]["data"]["status"] == "succeeded"
