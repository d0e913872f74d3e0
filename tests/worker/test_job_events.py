"""A job's events reach its stream in the order they happened, tokens included.

Token deltas are buffered (``JobEvents``) and sent with the next event in one
round trip; a watcher must still read every token of a reply before the event
that follows it, and nothing twice. Against a real Redis stream.
"""

from __future__ import annotations

import uuid
from typing import cast

import redis

from services.common.contracts.keys import job_stream
from services.common.events import EventPublisher, decode_entry
from services.worker.spine.events import JobEvents
from tests.conftest import Stack


def _stream(client: redis.Redis, job_id: str) -> list[tuple[str, dict[str, object]]]:
    raw = cast("list[tuple[bytes, dict[bytes, bytes]]]", client.xrange(job_stream(job_id)))
    entries = [decode_entry(i, f) for i, f in raw]
    return [(e["type"], e["data"]) for e in entries]


class TestBufferedTokensGoFirst:
    def test_an_event_after_tokens_follows_all_of_them_in_one_stream(self, stack: Stack) -> None:
        client = redis.Redis.from_url(stack.redis_url)
        job_id = str(uuid.uuid4())
        events = JobEvents(EventPublisher(client), job_id, flush_s=3600)
        for delta in ("The ", "answer", "."):
            events.token(delta)
        events.emit("model", {"model": "sim"})
        events.token("late")
        events.emit_final([("final", {"status": "succeeded"})])
        assert _stream(client, job_id) == [
            ("token", {"text": "The answer."}),
            ("model", {"model": "sim"}),
            ("token", {"text": "late"}),
            ("final", {"status": "succeeded"}),
        ]
        assert client.ttl(job_stream(job_id)) > 0

    def test_no_tokens_no_token_event(self, stack: Stack) -> None:
        client = redis.Redis.from_url(stack.redis_url)
        job_id = str(uuid.uuid4())
        events = JobEvents(EventPublisher(client), job_id, flush_s=3600)
        events.emit("model", {"model": "sim"})
        events.flush_tokens()
        assert _stream(client, job_id) == [("model", {"model": "sim"})]
