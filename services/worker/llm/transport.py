"""HTTP/1.1 POSTs to one model endpoint over pooled keep-alive connections (stdlib ``http.client``).

Why not the ``openai`` SDK or httpx: the worker makes one model call per agent
step from up to ~250 threads that share one GIL, and the SDK's request building,
auth hooks and httpx client machinery cost about three times the CPU of a bare
``http.client`` round trip (bench/llm_sim_latency.py prints both).

Guarantees:

- Connections are reused: a connection goes back to the pool only after its
  response was read to the end, and a pooled one that the server has closed
  meanwhile (keep-alive timeout) is noticed before use and replaced. If a reused
  connection still fails before any response byte arrives (the server closed it
  as we sent), the request is sent once more on a fresh connection; the server
  dropped the connection without answering, so it did not act on the request.
- Thread-safe: each call holds its own connection; only the idle list is shared.
- Failures surface as the stdlib raises them, except that a failed connect is a
  :class:`ConnectFailed` (a refused, unresolvable or untrusted endpoint), so that
  ``errors.from_transport_error`` can tell it from a connection dropped later.
  ``TimeoutError`` is raised as is, for connects and reads alike (``timeout_s``
  bounds each socket operation, as httpx's timeout did).
- TLS verifies against ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else the
  system trust store; proxies come from the environment (see ``proxy``).
  Redirects are not followed: a 3xx is returned like any other status.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import select
import ssl
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from services.worker.llm.proxy import Route

if TYPE_CHECKING:
    from types import TracebackType

# One read pulls whatever the socket has, up to this much (a streamed token is ~150 bytes).
READ_SIZE = 65536
# A reused connection the server closed as we sent fails with one of these, before a response.
_STALE_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class ConnectFailed(OSError):
    """Opening a connection (TCP connect, proxy tunnel or TLS handshake) failed."""


def tls_context() -> ssl.SSLContext:
    """Certificate-verifying TLS for endpoints; honours ``SSL_CERT_FILE``/``SSL_CERT_DIR``."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        context = ssl.create_default_context(cafile=cafile or None, capath=capath or None)
    else:
        context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class Transport:
    """POSTs to one endpoint; share one instance across threads."""

    def __init__(self, route: Route, *, timeout_s: float) -> None:
        self.route = route
        self.timeout_s = timeout_s
        self._tls = tls_context() if route.tls else None
        # A forwarding proxy (plain-http endpoint) wants its credentials on every request.
        self._proxy_headers = {} if route.tls else route.proxy_headers
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def post(self, target: str, body: bytes, headers: dict[str, str]) -> Reply:
        """Send one request and return its reply once the status line and headers are in.

        The caller must use the reply as a context manager (or ``release`` it) so the
        connection goes back to the pool or is closed.
        """
        if self._proxy_headers:
            headers = {**headers, **self._proxy_headers}
        conn, reused = self._checkout()
        try:
            try:
                response = _send(conn, target, body, headers)
            except _STALE_ERRORS:
                if not reused:
                    raise
                conn.close()
                conn = self._connect()
                response = _send(conn, target, body, headers)
        except BaseException:
            conn.close()
            raise
        return Reply(self, conn, response)

    def close(self) -> None:
        """Close the idle connections; connections in use close when their reply is released.

        Calls made after ``close`` still work, each on a connection of its own.
        """
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(), False
            if _usable(conn):
                return conn, True
            conn.close()

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def _connect(self) -> http.client.HTTPConnection:
        route = self.route
        conn: http.client.HTTPConnection
        if self._tls is not None:
            conn = http.client.HTTPSConnection(
                route.host, route.port, timeout=self.timeout_s, context=self._tls
            )
            if route.tunnel is not None:
                # TLS runs inside the tunnel and checks the endpoint's name, not the proxy's.
                conn.set_tunnel(*route.tunnel, headers=route.proxy_headers)
        else:
            conn = http.client.HTTPConnection(route.host, route.port, timeout=self.timeout_s)
        try:
            conn.connect()
        except TimeoutError:
            conn.close()
            raise
        except OSError as exc:
            conn.close()
            where = f"{route.host}:{route.port}"
            raise ConnectFailed(f"cannot connect to {where}: {exc}") from exc
        return conn


def _send(
    conn: http.client.HTTPConnection, target: str, body: bytes, headers: dict[str, str]
) -> http.client.HTTPResponse:
    conn.request("POST", target, body=body, headers=headers)
    return conn.getresponse()


def _usable(conn: http.client.HTTPConnection) -> bool:
    """An idle keep-alive connection has nothing to read; readable means the server
    closed it (or broke protocol), so it must not carry a request."""
    sock = conn.sock
    if sock is None:
        return False
    poller = select.poll()  # not select(): descriptors above 1024 are normal with 250 threads
    poller.register(sock, select.POLLIN)
    return not poller.poll(0)


class Reply:
    """One response: status and headers now, the body read once, whole or as lines."""

    def __init__(
        self,
        transport: Transport,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
    ) -> None:
        self._transport = transport
        self._conn = conn
        self._response = response
        self._complete = False  # the body was read to its end: the connection can be reused
        self.status = response.status

    def header(self, name: str) -> str | None:
        return self._response.getheader(name)

    def headers(self) -> dict[str, str]:
        """All headers, names lower-cased."""
        return {name.lower(): value for name, value in self._response.getheaders()}

    def read(self) -> bytes:
        """The whole body."""
        data = self._response.read()
        self._complete = True
        return data

    def lines(self) -> Iterator[str]:
        """The body's lines as they arrive (CR, LF or CRLF ends one, as in server-sent
        events); invalid UTF-8 becomes U+FFFD, as httpx's ``iter_lines`` decoded it."""
        read1 = self._response.read1
        pending = b""
        while block := read1(READ_SIZE):
            data = pending + block if pending else block
            held = b""
            if data.endswith(b"\r"):  # maybe the first half of a CRLF split across reads
                data, held = data[:-1], b"\r"
            if b"\r" in data:
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            *complete, rest = data.split(b"\n")
            pending = rest + held
            for line in complete:
                yield line.decode("utf-8", "replace")
        # A length-delimited body is done once its bytes are in; read() marks it closed.
        self._response.read()
        self._complete = True
        if pending:  # the last line, ended by the body's end or by a lone CR
            yield pending.removesuffix(b"\r").decode("utf-8", "replace")

    def release(self) -> None:
        """Back to the pool if the body was read to its end, else close the connection."""
        response = self._response
        if self._complete and response.isclosed() and not response.will_close:
            self._transport._checkin(self._conn)
        else:
            with contextlib.suppress(OSError):
                response.close()
            self._conn.close()

    def __enter__(self) -> Reply:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
