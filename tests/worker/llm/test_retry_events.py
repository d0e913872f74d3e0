"""Retries visible to watchers: an attempt that streamed text and failed, with another
attempt to follow, puts ``model_retry`` on the job's event stream (real simulator
endpoints, real Redis), after that attempt's text and before the next one's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from redis import Redis

from services.common.contracts.keys import job_stream
from services.common.events import EventPublisher, decode_entry
from services.worker.llm.types import RetryNotice
from services.worker.spine.events import JobEvents
from services.worker.spine.model_call import retry_events
from tests.conftest import RedisDbs
from tests.worker.llm.routing_fixtures import (
    USER,
    Endpoints,
    endpoints,  # noqa: F401 (fixture)
    fresh_key,
    router_for,
)

MODEL = "retry-model"
A_TEXT = "alpha beta gamma delta epsilon zeta"


@pytest.fixture
def redis(redis_dbs: RedisDbs) -> Iterator[Redis]:
    client = Redis.from_url(redis_dbs.main)
    yield client
    client.close()


def test_a_fallback_after_streamed_text_is_announced_between_the_attempts(
    endpoints: Endpoints,  # noqa: F811
    redis: Redis,
) -> None:
    key, job_id = fresh_key(), str(uuid.uuid4())
    endpoints.script(endpoints.a, key, {"replies": [{"disconnect": True}, {"content": A_TEXT}]})
    endpoints.script(endpoints.b, key, {"replies": [{"content": "answered by B"}]})
    events = JobEvents(EventPublisher(redis), job_id, flush_s=60)  # tokens flushed on demand
    routed = router_for(endpoints, MODEL).complete(
        scene="agent_reasoning",
        messages=USER,
        max_tokens=64,
        conversation_key=key,
        on_token=events.token,
        on_retry=retry_events(events),
    )
    events.flush_tokens()
    assert routed.response.content == "answered by B"
    entries: list[Any] = redis.xrange(job_stream(job_id))  # type: ignore[assignment]
    seen = [decode_entry(i, f) for i, f in entries]
    assert [e["type"] for e in seen] == ["token", "model_retry", "token"]
    assert A_TEXT.startswith(seen[0]["data"]["text"])  # the dropped attempt's partial text
    retry = seen[1]["data"]
    assert retry["attempt"] == 1 and retry["wait_s"] == 0.0
    assert "disconnect" in retry["error"]
    assert seen[2]["data"]["text"] == "answered by B"


def test_a_new_pass_is_announced_with_its_wait(endpoints: Endpoints) -> None:  # noqa: F811
    key = fresh_key()
    drop = {"disconnect": True}
    endpoints.script(endpoints.a, key, {"replies": [drop, {"content": "A at last"}]})
    endpoints.script(endpoints.b, key, {"replies": [drop, {"content": "B at last"}]})
    notices: list[RetryNotice] = []
    routed = router_for(endpoints, MODEL, llm_max_retries=1).complete(
        scene="agent_reasoning",
        messages=USER,
        max_tokens=64,
        conversation_key=key,
        on_token=lambda _: None,
        on_retry=notices.append,
    )
    assert routed.response.content == "A at last"
    assert [n.attempt for n in notices] == [1, 2]
    assert notices[0].wait_s == 0.0 and notices[1].wait_s > 0  # the backoff before pass 2


def test_a_failure_that_streamed_nothing_is_not_announced(
    endpoints: Endpoints,  # noqa: F811
) -> None:
    key = fresh_key()
    endpoints.script(endpoints.a, key, {"replies": [{"error": 503}, {"content": "A"}]})
    endpoints.script(endpoints.b, key, {"replies": [{"content": "B"}]})
    notices: list[RetryNotice] = []
    routed = router_for(endpoints, MODEL).complete(
        scene="agent_reasoning",
        messages=USER,
        max_tokens=64,
        conversation_key=key,
        on_token=lambda _: None,
        on_retry=notices.append,
    )
    assert routed.response.content == "B" and notices == []
