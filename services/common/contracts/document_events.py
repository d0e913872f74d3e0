"""The events of a library document's stream (``keys.document_stream``), one pydantic
model per type, the way ``events.py`` defines a job's.

On the wire an event is ``{type, data}``, its data always naming the document
(``document_id``). The library service's ingestion publishes them through
``services.library.progress.DocumentProgress``, which checks each one against
``DocumentEvent`` (strictly under ``LEAFLAB_ENV=test``, like ``EventPublisher``); the
API's SSE route parses every entry it relays and skips one the union refuses, and
makes the terminal event from the row with these models when the stream has none;
the browser reads the type names and the data's types written by ``write_js``.

Declared fields are what the emitters always send, typed strictly; others are allowed
(``extra="allow"``). An unknown type or a declared field of the wrong type is an error.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _DocumentEvent(BaseModel):
    # Strict: every emitter is Python sending ints and floats, so a number spelled as a
    # string ("4") is a broken emitter, not a value to coerce.
    model_config = ConfigDict(extra="allow", strict=True)

    document_id: str

    def data(self) -> dict[str, Any]:
        """The event's data as published: every field but ``type`` that was given (an
        optional field left out stays out, as the emitter sent it)."""
        return self.model_dump(mode="json", exclude={"type"}, exclude_unset=True)


class DocumentParsed(_DocumentEvent):
    """The PDF is parsed and chunked; embedding starts."""

    type: Literal["document.parsed"]
    pages: int
    chunks: int


class DocumentBatch(_DocumentEvent):
    """One more batch of chunks is stored (``done`` of ``total``; ``reused``: vectors
    found in the hash cache, not embedded again)."""

    type: Literal["document.batch"]
    done: int
    total: int
    embedded: int
    reused: int


class DocumentReady(_DocumentEvent):
    """The document is searchable: the stream's last event. The ingestion sends every
    field; one made from the row (the stream expired) has only chunks and pages,
    which a row may lack (None)."""

    type: Literal["document.ready"]
    chunks: int | None
    pages: int | None
    embedded: int | None = None
    reused: int | None = None
    seconds: float | None = None
    pages_per_s: float | None = None


class DocumentFailed(_DocumentEvent):
    """The document cannot be ingested: the stream's last event (``reason``: the row's
    error, None when it has none)."""

    type: Literal["document.failed"]
    reason: str | None


DocumentEvent = Annotated[
    DocumentParsed | DocumentBatch | DocumentReady | DocumentFailed,
    Field(discriminator="type"),
]
DOCUMENT_EVENT: TypeAdapter[DocumentEvent] = TypeAdapter(DocumentEvent)

# Every type name, sorted (the browser listens for these).
DOCUMENT_EVENT_TYPES: tuple[str, ...] = tuple(
    sorted(DOCUMENT_EVENT.json_schema()["discriminator"]["mapping"])
)
# The events that end a document's stream: nothing is published after them.
DOCUMENT_TERMINAL: frozenset[str] = frozenset({"document.ready", "document.failed"})


def parse_document_event(event_type: str, data: dict[str, Any]) -> DocumentEvent:
    """The typed event; ``pydantic.ValidationError`` for an unknown type or a bad field.

    ``data`` must not carry its own ``type`` (it would stand in for the real one)."""
    if "type" in data:
        raise ValueError(f"a {event_type!r} event's data has a 'type' field")
    return DOCUMENT_EVENT.validate_python({**data, "type": event_type})
