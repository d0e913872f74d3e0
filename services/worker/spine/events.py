"""Per-job event emission with token coalescing.

Token deltas arrive one per streamed chunk; writing each to Redis would cost a
round trip per token, so they are buffered and flushed at a short interval.
The stream's expiry is renewed by the first event of each slice and by the
terminal ones, not by every event: a slice lasts seconds, the expiry a week.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from services.common.events import EventPublisher


class JobEvents:
    def __init__(self, publisher: EventPublisher, job_id: str, *, flush_s: float) -> None:
        self._publisher = publisher
        self._job_id = job_id
        self._flush_s = flush_s
        self._buffer: list[str] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._ttl_renewed = False

    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        # Tokens still buffered go first, in the same round trip (a model reply's
        # last tokens and the ``model`` event after it: one XADD pipeline, not two).
        self._publish([*self._take_tokens(), (event_type, data)], renew=event_type == "final")

    def emit_final(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        """The slice's last events, in one round trip, renewing the stream's expiry."""
        self._publish([*self._take_tokens(), *events], renew=True)

    def _publish(self, events: list[tuple[str, dict[str, Any]]], *, renew: bool = False) -> None:
        renew = renew or not self._ttl_renewed
        if self._publisher.publish_many(self._job_id, events, refresh_ttl=renew) and renew:
            self._ttl_renewed = True

    def _take_tokens(self) -> list[tuple[str, dict[str, Any]]]:
        """The buffered token deltas as one ``token`` event (none when empty)."""
        with self._lock:
            if not self._buffer:
                return []
            text = "".join(self._buffer)
            self._buffer.clear()
            self._last_flush = time.monotonic()
        return [("token", {"text": text})]

    def token(self, delta: str) -> None:
        with self._lock:
            self._buffer.append(delta)
            due = time.monotonic() - self._last_flush >= self._flush_s
        if due:
            self.flush_tokens()

    def flush_tokens(self) -> None:
        if tokens := self._take_tokens():
            self._publish(tokens)
