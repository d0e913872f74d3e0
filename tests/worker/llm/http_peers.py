"""Real HTTP peers for the model client's transport tests.

``Relay`` sits in front of a server on a port of its own, counts the connections
clients open, records what they send, and can close them (a server's keep-alive
timeout) or act as an HTTP proxy. ``CannedServer`` answers each POST with the next
canned reply, in chunks with pauses between them, as a model server streams.
``tls_sim`` serves the model simulator over https with a self-signed certificate.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import uvicorn

from services.model_sim.app import SimConfig, create_app


class Relay:
    """Pipes each accepted connection to ``upstream``.

    ``proxy=True`` makes it an HTTP proxy for that one upstream: a ``CONNECT`` is
    answered 200 and the tunnel piped; anything else (absolute-form requests) is
    piped as is (uvicorn serves absolute-form targets).
    ``close_on_next_request=True`` closes an already-used connection when the next
    request arrives on it, without forwarding it (a server that closed the
    connection just as the client sent).
    """

    def __init__(self, upstream: tuple[str, int], *, proxy: bool = False) -> None:
        self.upstream = upstream
        self.proxy = proxy
        self.close_on_next_request = False
        self.accepted = 0
        self.sent = bytearray()  # everything clients sent, in arrival order
        # What each accepted connection sent, in accept order: other HTTP clients of the
        # test process (a span exporter honouring HTTP_PROXY, say) may use a proxy too.
        self.connections: list[bytearray] = []
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop_all(self) -> None:
        """Close every connection now, as a server does at its keep-alive timeout."""
        with self._lock:
            conns, self._open = self._open, []
        for conn in conns:
            _close(conn)
        time.sleep(0.05)  # let the FINs arrive

    def stop(self) -> None:
        self._listener.close()
        self.drop_all()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            sent = bytearray()
            with self._lock:
                self.accepted += 1
                self.connections.append(sent)
            threading.Thread(target=self._serve, args=(client, sent), daemon=True).start()

    def carrying(self, prefix: bytes) -> list[bytes]:
        """What each connection that began with ``prefix`` sent."""
        with self._lock:
            return [bytes(sent) for sent in self.connections if sent.startswith(prefix)]

    def _serve(self, client: socket.socket, sent: bytearray) -> None:
        first = b""
        if self.proxy:
            first = _read_head(client)
            if first.startswith(b"CONNECT"):
                self._record(first, sent)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                first = b""
        upstream = socket.create_connection(self.upstream)
        with self._lock:
            self._open += [client, upstream]
        if first:
            self._record(first, sent)
            upstream.sendall(first)
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        self._pump_requests(client, upstream, sent, used=bool(first))

    def _pump_requests(
        self, client: socket.socket, upstream: socket.socket, sent: bytearray, *, used: bool
    ) -> None:
        while True:
            try:
                data = client.recv(65536)
            except OSError:
                data = b""
            if not data or (used and self.close_on_next_request and _starts_request(data)):
                _close(client)
                _close(upstream)
                return
            used = True
            self._record(data, sent)
            try:
                upstream.sendall(data)
            except OSError:
                _close(client)
                return

    def _record(self, data: bytes, sent: bytearray) -> None:
        with self._lock:
            self.sent += data
            sent += data


def _starts_request(data: bytes) -> bool:
    return data.startswith((b"POST ", b"GET "))


def _read_head(sock: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(65536)
        if not data:
            break
        head += data
    return head


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    while True:
        try:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        except OSError:
            break
    _close(dst)
    _close(src)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@dataclass
class Canned:
    """One reply: status, headers, and the body in ``pieces`` (each one chunk of a
    chunked body, with ``pause_s`` before the next; or one Content-Length body)."""

    pieces: list[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunked: bool = True
    pause_s: float = 0.005


@dataclass
class SeenRequest:
    target: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


class CannedServer:
    """An HTTP/1.1 keep-alive server: each POST gets the next canned reply (the last
    repeats); requests are recorded and connections counted."""

    def __init__(self, replies: list[Canned]) -> None:
        self.replies = replies
        self.requests: list[SeenRequest] = []
        self.connections = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A client that gave up mid-reply (a timeout test) is expected, not a server error.
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> Canned:
        return self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                server.connections += 1
                super().setup()

            def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append(SeenRequest(self.path, headers, body))
                self._send(server._next())

            def _send(self, reply: Canned) -> None:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if not reply.chunked:
                    whole = b"".join(reply.pieces)
                    self.send_header("Content-Length", str(len(whole)))
                    self.end_headers()
                    self.wfile.write(whole)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in reply.pieces:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                    time.sleep(reply.pause_s)
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler


@contextmanager
def canned(*replies: Canned) -> Iterator[CannedServer]:
    server = CannedServer(list(replies))
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def relay(upstream: tuple[str, int], *, proxy: bool = False) -> Iterator[Relay]:
    peer = Relay(upstream, proxy=proxy)
    try:
        yield peer
    finally:
        peer.stop()


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1 and its key (openssl, EC P-256, one day)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    return cert, key


@contextmanager
def tls_sim(cert: Path, key: Path) -> Iterator[int]:
    """The model simulator served over https on 127.0.0.1; yields its port."""
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(SimConfig()),
        log_level="warning",
        lifespan="off",
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "https simulator did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(5)
