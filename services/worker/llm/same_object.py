"""An encoding reused while the same object is passed again.

The tool schemas sent with every model call are one list built once by the
tool registry (``ToolRegistry.schemas``) and never changed: ≈ 14 KB of JSON,
encoded twice per call (the budget's size estimate, then the request body),
≈ 0.2 ms of CPU each under the GIL all agents share. Keyed by identity, not by
value: comparing two lists of schemas costs about as much as encoding one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SameObject(Generic[T]):
    """``encode(value)``, remembered for the last value passed (by identity).

    Only for values nobody mutates once built; one entry, so a caller passing a
    fresh list every time (a subagent's narrowed tool set) just encodes it.
    """

    def __init__(self, encode: Callable[[object], T]) -> None:
        self._encode = encode
        self._last: tuple[object, T] | None = None

    def __call__(self, value: object) -> T:
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0] is value:
            return last[1]
        encoded = self._encode(value)
        self._last = (value, encoded)  # holds the value, so its id cannot be reused
        return encoded
