"""An SSE client that behaves like a browser's EventSource: it reconnects with
Last-Event-ID after a broken stream, a bounded number of times."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import httpx


@dataclass
class SseLog:
    """What one client saw: events in order, and each connection attempt's outcome."""

    events: list[tuple[str, str]] = field(default_factory=list)  # (id, type)
    attempts: list[str] = field(default_factory=list)  # "200 ended", "503", "broken: ..."
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def types(self) -> list[str]:
        return [t for _, t in self.events]


class SseClient:
    def __init__(self, url: str, key: str, job_id: str, *, max_connects: int = 60) -> None:
        self.url = f"{url}/v1/jobs/{job_id}/events"
        self.headers = {"Authorization": f"Bearer {key}"}
        self.max_connects = max_connects
        self.log = SseLog()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SseClient:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            for _ in range(self.max_connects):
                if self._connect_once():
                    return
                time.sleep(0.5)  # EventSource's retry delay, shortened
        finally:
            self.log.done.set()

    def _connect_once(self) -> bool:
        """One connection; True when the stream ended cleanly (job over)."""
        headers = dict(self.headers)
        if self.log.events:
            headers["Last-Event-ID"] = self.log.events[-1][0]
        # Bounded read timeout: a stream that stalls counts as broken, never a hang.
        timeout = httpx.Timeout(10.0, read=10.0)
        try:
            with httpx.stream("GET", self.url, headers=headers, timeout=timeout) as resp:
                if resp.status_code != 200:
                    resp.read()
                    self.log.attempts.append(f"{resp.status_code} {resp.text[:200]}")
                    return False
                self._consume(resp)
        except httpx.HTTPError as exc:
            self.log.attempts.append(f"broken: {type(exc).__name__}")
            return False
        self.log.attempts.append("200 ended")
        return True

    def _consume(self, resp: httpx.Response) -> None:
        event_id, event_type = "", "message"
        for line in resp.iter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                event_type = line[7:]
            elif line == "" and event_id:
                self.log.events.append((event_id, event_type))
                event_id, event_type = "", "message"
