"""A byte relay between Leaflab's worker and the model server that keeps a copy of
each request the worker sent and counts the content chunks of each reply.

The job benchmark needs the worker's own request (system prompt, tool schemas,
the user's message, ``max_tokens``) to replay it directly to the same server, so
"through Leaflab" and "directly" evaluate the same prompt. The relay moves bytes
with ``recv``/``sendall`` and parses nothing on the way (requests are split from
a copy), so it adds a loopback hop and no waiting.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# A streamed chunk that carries text: `"content":"x…"` (an empty string is no token).
CONTENT_CHUNK = re.compile(rb'"content":\s?"(?!")')


@dataclass
class Relayed:
    """One request the worker sent through the relay, and what came back."""

    at: float  # perf_counter when its body had fully arrived
    conversation: str
    body: dict[str, Any]
    content_chunks: int = 0
    ended: float = 0.0  # perf_counter of the last byte of its reply seen so far
    status: int | None = None  # the reply's HTTP status


@dataclass
class TeeRelay:
    """Listens on 127.0.0.1 and forwards every connection to ``upstream`` (host, port)."""

    upstream: tuple[str, int]
    requests: list[Relayed] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> int:
        self._server = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()
        return int(self._server.getsockname()[1])

    def stop(self) -> None:
        self._server.close()

    def busy_s(self, since: float = 0.0) -> float:
        """Seconds during which at least one request was with the server (the union of
        their intervals from the request's last byte to the reply's last byte)."""
        with self._lock:
            spans = sorted((r.at, max(r.ended, r.at)) for r in self.requests if r.at >= since)
        busy, reach = 0.0, 0.0
        for start, end in spans:
            start = max(start, reach)
            if end > start:
                busy += end - start
            reach = max(reach, end)
        return busy

    def of(self, conversation_prefix: str) -> list[Relayed]:
        with self._lock:
            return [r for r in self.requests if r.conversation.startswith(conversation_prefix)]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            current: list[Relayed] = []
            threading.Thread(target=self._up, args=(client, upstream, current), daemon=True).start()
            threading.Thread(
                target=self._down, args=(upstream, client, current), daemon=True
            ).start()

    def _up(self, src: socket.socket, dst: socket.socket, current: list[Relayed]) -> None:
        """Client → server: forwarded as read; a copy is cut into requests."""
        pending = b""
        for data in _chunks(src, dst):
            pending += data
            while (request := _split_request(pending)) is not None:
                headers, body, pending = request
                key = headers.get("x-leaflab-conversation", "")
                # Not a completion (GET /v1/models, /props: endpoint discovery): its reply
                # is tracked apart, so it is counted with no request on record.
                completion = body.startswith(b"{")
                relayed = Relayed(time.perf_counter(), key, json.loads(body) if completion else {})
                if completion:
                    with self._lock:
                        self.requests.append(relayed)
                current[:] = [relayed]

    def _down(self, src: socket.socket, dst: socket.socket, current: list[Relayed]) -> None:
        """Server → client: forwarded as read; content chunks counted for the newest request."""
        tail = b""
        for data in _chunks(src, dst):
            window = tail + data
            if current:
                relayed = current[0]
                relayed.ended = time.perf_counter()
                if relayed.status is None and data.startswith(b"HTTP/"):
                    relayed.status = int(data[9:12])
                relayed.content_chunks += len(CONTENT_CHUNK.findall(window)) - len(
                    CONTENT_CHUNK.findall(tail)
                )
            tail = window[-24:]


def _chunks(src: socket.socket, dst: socket.socket) -> Any:
    """Yield what ``src`` sends, then forward it to ``dst`` (so a request is on record
    before the server can answer it); close both at the end."""
    try:
        while data := src.recv(65536):
            yield data
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _split_request(buffer: bytes) -> tuple[dict[str, str], bytes, bytes] | None:
    """(headers, body, rest) of the first whole request in ``buffer``, else None."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buffer[:end].decode("latin-1").split("\r\n")[1:]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    if len(buffer) < end + 4 + length:
        return None
    return headers, buffer[end + 4 : end + 4 + length], buffer[end + 4 + length :]
