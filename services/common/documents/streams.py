"""Where a library document's ingestion progress lives: one Redis stream per
document. The library service writes it; the API streams it to clients (SSE),
so the key is spelled here, once, for both."""

from __future__ import annotations

# The events that end a document's stream: nothing is published after them.
TERMINAL_EVENTS = frozenset({"document.ready", "document.failed"})


def document_stream_key(document_id: str) -> str:
    return f"leaflab:library:document:{document_id}"
