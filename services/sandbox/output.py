"""Bounded capture of a process's output: head + tail, never the whole stream."""

from __future__ import annotations

TRUNCATION_MARKER = "\n…[{omitted} bytes of output omitted]…\n"


class BoundedOutput:
    """Keeps the first and last ``cap // 2`` bytes of a stream and counts the rest.

    Memory stays O(cap) however much the process prints, so a program writing
    a gigabyte cannot exhaust the worker.
    """

    def __init__(self, cap: int) -> None:
        self._half = max(cap // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        omitted = self.total - len(self._head) - len(self._tail)
        return head + TRUNCATION_MARKER.format(omitted=omitted) + tail
