"""Job event streams outlive a silent model and say so when their events were lost.

The API runs with a 1 s Redis socket timeout and a 2 s heartbeat (production:
5 s and 15 s, the same order), and the model takes 3 s to answer: longer than
the socket timeout, so a read that blocked for the whole heartbeat interval
would kill the stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.cli.client import parse_sse
from services.common.contracts.keys import job_stream
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services, Simulator

SLOW_MODEL_MS = 3_000


@dataclass
class SlowStack:
    url: str
    sim: Simulator
    redis: redis.Redis


@pytest.fixture(scope="module")
def slow(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlowStack]:
    svc = Services(stack, tmp_path_factory.mktemp("sse"))
    try:
        sim = svc.simulator()
        svc.env.update({"LEAFLAB_REDIS_SOCKET_TIMEOUT_S": "1", "LEAFLAB_SSE_PING_S": "2"})
        url = svc.api()
        svc.worker()
        yield SlowStack(url, sim, redis.Redis.from_url(stack.redis_url))
    finally:
        svc.stop()


def _raw_stream(client: httpx.Client, job_id: str, last_id: str | None = None) -> list[str]:
    headers = {"Last-Event-ID": last_id} if last_id else {}
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers, timeout=60) as resp:
        assert resp.status_code == 200
        return list(resp.iter_lines())


def _events(lines: list[str]) -> list[dict[str, Any]]:
    return list(parse_sse(iter(lines)))


def _submit(slow: SlowStack, client: httpx.Client, replies: list[dict[str, Any]]) -> str:
    session = client.post("/v1/sessions", json={}).json()
    slow.sim.set_script(session["id"], {"latency_ms": SLOW_MODEL_MS, "replies": replies})
    resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "think hard"})
    assert resp.status_code == 202
    return str(resp.json()["job_id"])


class TestSilence:
    def test_stream_survives_a_model_slower_than_the_socket_timeout(
        self, slow: SlowStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(slow.url, make_user(session_factory))
        job_id = _submit(slow, client, [{"content": "a considered answer"}])
        lines = _raw_stream(client, job_id)
        events = _events(lines)
        assert events[-1]["event"] == "final"
        assert events[-1]["data"]["status"] == "succeeded"
        streamed = "".join(e["data"]["text"] for e in events if e["event"] == "token")
        assert "a considered answer" in streamed
        # While the model was silent the stream sent heartbeats.
        assert ": ping" in lines


class TestLostEvents:
    def test_resume_after_the_event_store_lost_the_stream_says_events_lost(
        self, slow: SlowStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(slow.url, make_user(session_factory))
        job_id = _submit(slow, client, [{"content": "done"}])
        events = _events(_raw_stream(client, job_id))
        last_seen = events[1]["id"]
        # Redis restarted empty: the stream is gone.
        slow.redis.delete(job_stream(job_id))
        resumed = _events(_raw_stream(client, job_id, last_id=last_seen))
        assert resumed[0]["event"] == "events_lost"
        assert resumed[0]["data"]["last_event_id"] == last_seen
        assert f"/v1/jobs/{job_id}" in resumed[0]["data"]["message"]
        # Nothing else is in the store, and the job itself is still readable.
        assert [e["event"] for e in resumed] == ["events_lost"]
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"

    def test_loss_mid_job_is_reported_then_the_rest_streams(
        self, slow: SlowStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(slow.url, make_user(session_factory))
        glob = {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}
        job_id = _submit(slow, client, [glob, {"content": "finished after the loss"}])
        seen: list[dict[str, Any]] = []
        with client.stream("GET", f"/v1/jobs/{job_id}/events", timeout=60) as resp:
            for event in parse_sse(resp.iter_lines()):
                seen.append(event)
                if event["event"] == "tool_end":
                    break
        # The store loses everything while the model thinks about its next reply.
        slow.redis.delete(job_stream(job_id))
        resumed = _events(_raw_stream(client, job_id, last_id=seen[-1]["id"]))
        assert resumed[0]["event"] == "events_lost"
        assert resumed[-1]["event"] == "final"
        assert resumed[-1]["data"]["status"] == "succeeded"
        later = "".join(e["data"]["text"] for e in resumed if e["event"] == "token")
        assert "finished after the loss" in later
        assert wait_job(client, job_id)["status"] == "succeeded"

    def test_resume_from_an_event_still_stored_has_no_gap_notice(
        self, slow: SlowStack, session_factory: sessionmaker[Session]
    ) -> None:
        client = client_for(slow.url, make_user(session_factory))
        job_id = _submit(slow, client, [{"content": "kept"}])
        events = _events(_raw_stream(client, job_id))
        resumed = _events(_raw_stream(client, job_id, last_id=events[0]["id"]))
        assert [e["id"] for e in resumed] == [e["id"] for e in events[1:]]
