"""One private asyncio event loop per worker process, for the MCP SDK (which is async).

The agent loop runs on Celery's threads; each MCP call is a coroutine handed to
this loop with ``run_coroutine_threadsafe`` and waited for with a deadline. A
server's session stays open on the loop between calls (a call then costs about
a millisecond; opening a stdio session per call costs 0.6-0.8 s of process start
and handshake, measured with mcp-server-time), and a call that overruns is
cancelled on the loop, so a hanging server costs its caller the timeout and
nothing else. The loop runs in a daemon thread started on first use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopTimeout(Exception):
    """The coroutine did not finish within its deadline (and was cancelled)."""


class McpLoop:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="leaflab-mcp-loop", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T], *, timeout_s: float) -> T:
        """``coro``'s result; LoopTimeout (after cancelling it) past ``timeout_s``."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise LoopTimeout(f"no answer within {timeout_s:g} s") from None
