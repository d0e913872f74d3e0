"""A library document's events (services/common/contracts/document_events.py).

What the ingestion publishes, checked on the outcome: every shape it sends parses
and round-trips through the stream unchanged, a renamed type or a field of the wrong
type is refused — by the contract, and by the library's publisher before anything
reaches Redis — and the browser's generated names are the union's.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
from redis import Redis

from services.common.contracts.document_events import (
    DOCUMENT_EVENT_TYPES,
    DOCUMENT_TERMINAL,
    DocumentFailed,
    DocumentReady,
    parse_document_event,
)
from services.common.contracts.keys import document_stream
from services.common.contracts.write_js import rendered
from services.common.events import InvalidEvent, decode_entry
from services.library.progress import DocumentProgress

DOC = "9b2c1e9e-0000-4000-8000-000000000001"
# What services/library/ingest.py sends (one of each), document_id added by the publisher.
PUBLISHED: list[tuple[str, dict[str, Any]]] = [
    ("document.parsed", {"pages": 12, "chunks": 40}),
    ("document.batch", {"done": 32, "total": 40, "embedded": 30, "reused": 2}),
    (
        "document.ready",
        {
            "chunks": 40,
            "pages": 12,
            "embedded": 38,
            "reused": 2,
            "seconds": 3.5,
            "pages_per_s": 3.43,
        },
    ),
    ("document.failed", {"reason": "no text layer"}),
]
MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("document.parse", {"pages": 1, "chunks": 1}),  # an unknown (misspelt) type
    ("document.batch", {"done": "4", "total": 4, "embedded": 4, "reused": 0}),  # a string
    ("document.parsed", {"pages": 1}),  # chunks missing
    ("document.ready", {"chunks": 4, "pages": 1.5}),  # pages not a whole number
    ("document.failed", {"reason": ["x"]}),
    ("document.parsed", {"pages": 1, "chunks": 1, "type": "document.ready"}),  # another type
]


class TestContract:
    @pytest.mark.parametrize(("kind", "data"), PUBLISHED, ids=[k for k, _ in PUBLISHED])
    def test_every_emitted_shape_round_trips(self, kind: str, data: dict[str, Any]) -> None:
        sent = {"document_id": DOC, **data}
        event = parse_document_event(kind, json.loads(json.dumps(sent)))
        assert event.type == kind and event.data() == sent

    @pytest.mark.parametrize(("kind", "data"), MALFORMED, ids=[k for k, _ in MALFORMED])
    def test_a_malformed_event_is_refused(self, kind: str, data: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            parse_document_event(kind, {"document_id": DOC, **data})

    def test_an_event_without_its_document_is_refused(self) -> None:
        with pytest.raises(ValueError):
            parse_document_event("document.failed", {"reason": "x"})

    def test_extra_fields_survive(self) -> None:
        event = parse_document_event(
            "document.failed", {"document_id": DOC, "reason": None, "n": 1}
        )
        assert event.data() == {"document_id": DOC, "reason": None, "n": 1}

    def test_an_event_made_from_a_row_has_only_what_the_row_gave(self) -> None:
        ready = DocumentReady(type="document.ready", document_id=DOC, chunks=7, pages=None)
        assert ready.data() == {"document_id": DOC, "chunks": 7, "pages": None}
        failed = DocumentFailed(type="document.failed", document_id=DOC, reason=None)
        assert failed.data() == {"document_id": DOC, "reason": None}

    def test_every_type_has_an_example_and_the_terminal_ones_exist(self) -> None:
        assert [k for k, _ in PUBLISHED] == ["document.parsed", "document.batch"] + sorted(
            DOCUMENT_TERMINAL, reverse=True
        )
        assert set(DOCUMENT_EVENT_TYPES) == {k for k, _ in PUBLISHED}

    def test_the_browser_reads_the_same_names(self) -> None:
        (schema,) = [
            json.loads(t) for p, t in rendered().items() if p.name == "document_events.schema.json"
        ]
        assert set(schema["discriminator"]["mapping"]) == set(DOCUMENT_EVENT_TYPES)
        (script,) = [t for p, t in rendered().items() if p.name == "contracts.js"]
        assert f"DOCUMENT_EVENT_TYPES: Object.freeze({json.dumps(DOCUMENT_EVENT_TYPES)})" in script
        assert '"document.parsed": {document_id: string, pages: number, chunks: number}' in script


class TestPublisher:
    def _stream(self, redis: Redis, doc_id: str) -> list[dict[str, Any]]:
        return [decode_entry(i, f) for i, f in redis.xrange(document_stream(doc_id))]

    def test_what_it_publishes_reads_back_as_sent(self, redis: Redis) -> None:
        doc_id = str(uuid.uuid4())
        progress = DocumentProgress(redis, doc_id, strict=True)
        for kind, data in PUBLISHED:
            progress.publish(kind, data)
        got = [(e["type"], e["data"]) for e in self._stream(redis, doc_id)]
        assert got == [(k, {"document_id": doc_id, **d}) for k, d in PUBLISHED]
        assert 0 < redis.ttl(document_stream(doc_id)) <= 7 * 24 * 3600
        redis.delete(document_stream(doc_id))

    @pytest.mark.parametrize(("kind", "data"), MALFORMED[:2], ids=["unknown type", "wrong type"])
    def test_strict_refuses_a_bad_event_and_publishes_nothing(
        self, redis: Redis, kind: str, data: dict[str, Any]
    ) -> None:
        doc_id = str(uuid.uuid4())
        with pytest.raises(InvalidEvent):
            DocumentProgress(redis, doc_id, strict=True).publish(kind, data)
        assert self._stream(redis, doc_id) == []

    def test_strict_is_the_default_under_the_test_environment(
        self, redis: Redis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        monkeypatch.setenv("LEAFLAB_ENV", "test")
        with pytest.raises(InvalidEvent):
            DocumentProgress(redis, str(uuid.uuid4())).publish("document.parsed", {"pages": 1})
        # Elsewhere a bad event is logged and published as it is (like a job's).
        monkeypatch.setenv("LEAFLAB_ENV", "prod")
        doc_id = str(uuid.uuid4())
        with caplog.at_level(logging.WARNING, logger="services.common.events"):
            DocumentProgress(redis, doc_id).publish("document.parsed", {"pages": 1})
        assert [e["type"] for e in self._stream(redis, doc_id)] == ["document.parsed"]
        assert "breaks its contract" in caplog.text
        redis.delete(document_stream(doc_id))

    def test_redis_gone_never_fails_the_ingestion(self) -> None:
        dead = Redis(host="127.0.0.1", port=9, socket_connect_timeout=0.2)
        DocumentProgress(dead, DOC, strict=True).publish("document.failed", {"reason": "x"})
        DocumentProgress(None, DOC, strict=True).publish("document.failed", {"reason": "x"})
