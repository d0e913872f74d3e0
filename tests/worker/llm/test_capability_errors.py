"""Capability mismatches, read from what servers really answer: never retried, never an
outage (no breaker failure, no fallback), the server's message kept."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from redis import Redis

from services.worker.llm.errors import ModelError
from services.worker.llm.routing.router import ModelRouter
from tests.conftest import RedisDbs
from tests.worker.llm.http_peers import Canned, canned
from tests.worker.llm.routing_fixtures import (
    USER,
    Endpoints,
    endpoints,  # noqa: F401 (fixture)
    fresh_key,
    router_for,
)
from tests.worker.llm.test_transport import call_once

ROLES = "Conversation roles must alternate user/assistant/user/assistant/..."
# llama-cpp-python 0.3.x, as it answers a json_schema response_format (HTTP 500).
JSON_SCHEMA = "Unknown response_format type: json_schema"
STREAMED_TOOLS = "Automatic streaming tool choice is not supported"
OVERFLOW = "Requested tokens (5123) exceed context window of 4096"
# llama-cpp-python 0.3.x, as it answers (HTTP 500) a message its request model refuses.
REFUSED_MESSAGE = (
    "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 2, "
    "'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\"}"
)


@pytest.fixture
def redis(redis_dbs: RedisDbs) -> Iterator[Redis]:
    client = Redis.from_url(redis_dbs.main)
    yield client
    client.close()


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "internal_server_error"}}).encode()


@pytest.mark.parametrize(
    ("status", "message", "error_type"),
    [
        (500, ROLES, "template"),
        (500, JSON_SCHEMA, "unsupported"),
        (500, STREAMED_TOOLS, "unsupported"),
        (400, "tool_choice is not supported by this model", "unsupported"),
        (500, OVERFLOW, "context_overflow"),
        (400, OVERFLOW, "context_overflow"),
        (500, REFUSED_MESSAGE, "unsupported"),
    ],
)
def test_a_mismatch_is_classified_whatever_the_status(
    status: int, message: str, error_type: str
) -> None:
    reply = Canned([error_body(message)], status=status, chunked=False)
    with canned(reply) as server:
        with pytest.raises(ModelError) as caught:
            call_once(server.base_url, max_retries=2)
    err = caught.value
    assert (err.error_type, err.retryable, err.status) == (error_type, False, status)
    assert err.message == message  # discovery reads "context window of N" from it
    assert len(server.requests) == 1  # not retried


def test_an_outage_stays_an_outage_whatever_it_says() -> None:
    reply = Canned([error_body("model not supported while loading")], status=503, chunked=False)
    with canned(reply) as server:
        with pytest.raises(ModelError) as caught:
            call_once(server.base_url, max_retries=0)
    assert caught.value.error_type == "server_error" and caught.value.retryable


def test_an_error_event_in_a_stream_is_classified() -> None:
    body = b'data: {"error": {"message": "' + ROLES.encode() + b'"}}\n\n'
    with canned(Canned([body])) as server:
        with pytest.raises(ModelError) as caught:
            call_once(server.base_url, max_retries=2)
    assert caught.value.error_type == "template" and not caught.value.retryable
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "faults",
    [
        [{"error": 500, "message": JSON_SCHEMA}],
        # llama-cpp-python's way: an empty stream, then the real error when resent.
        [{"empty_stream": True}, {"error": 500, "message": ROLES}],
    ],
    ids=["500", "empty-stream"],
)
def test_the_router_takes_a_mismatch_as_an_answer(
    endpoints: Endpoints,  # noqa: F811
    redis: Redis,
    faults: list[dict[str, object]],
) -> None:
    model = f"m-{fresh_key()}"
    a = endpoints.a.url.removeprefix("http://")
    router: ModelRouter = router_for(
        endpoints, model, redis, breaker_failure_threshold=1, llm_max_retries=2
    )
    for _ in range(2):
        key = fresh_key()
        endpoints.script(endpoints.a, key, {"replies": [*faults, {"content": "A"}]})
        endpoints.script(endpoints.b, key, {"replies": [{"content": "B"}]})
        with pytest.raises(ModelError) as caught:
            router.complete(
                scene="agent_reasoning", messages=USER, max_tokens=16, conversation_key=key
            )
        assert caught.value.error_type in ("template", "unsupported")
        assert endpoints.requests(endpoints.a, key) == len(faults)  # no second pass
        assert endpoints.requests(endpoints.b, key) == 0  # no fallback
    assert router.breaker is not None
    assert router.breaker.state(a, model) == "closed"  # type: ignore[attr-defined]
