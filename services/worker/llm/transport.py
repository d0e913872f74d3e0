"""HTTP/1.1 POSTs to one model endpoint over pooled keep-alive sockets.

Why not the ``openai`` SDK or httpx: the worker makes one model call per agent
step from up to ~250 threads that share one GIL, and the SDK's request building,
auth hooks and httpx client machinery cost about three times the CPU of this
path (bench/llm_sim_latency.py prints both). The request is written here, in one
``sendall`` (``http.client.HTTPConnection`` sends the headers and the body in two,
a second syscall and packet per call); the response is parsed by the stdlib's
``http.client.HTTPResponse`` (status, headers, chunked or length-delimited body).

Guarantees:

- Connections are reused: a connection goes back to the pool only after its
  response was read to the end and the server did not ask to close it. A pooled
  connection that the server has closed meanwhile (keep-alive timeout) is noticed
  before use and replaced; if a reused one still fails before any response byte
  (the server closed it as we sent), the request goes once more on a fresh
  connection: the server dropped the connection without answering.
- Thread-safe: each call holds its own connection; only the idle list is shared.
- Failures surface as the stdlib raises them, except that a failed connect is a
  :class:`ConnectFailed` (a refused, unresolvable or untrusted endpoint, or a
  proxy that refused the tunnel), so that ``errors.from_transport_error`` can tell
  it from a connection dropped later. ``TimeoutError`` is raised as is, for
  connects and reads alike: ``timeout_s`` bounds the connect and each socket
  operation unless the call says otherwise (``post(wait_s=...)`` for the reply's
  headers, ``Reply.set_read_timeout`` for the body's reads).
- TLS verifies against ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else the
  system trust store; proxies come from the environment (see ``proxy``).
  Redirects are not followed: a 3xx is returned like any other status.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import select
import socket
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
        fixed = {"Host": route.host_header, "Accept-Encoding": "identity"}
        if route.tunnel is None:  # a forwarding proxy wants its credentials on every request
            fixed.update(route.proxy_headers)
        self._fixed_headers = _render(fixed)
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def post(
        self, target: str, body: bytes, headers: dict[str, str], *, wait_s: float | None = None
    ) -> Reply:
        """Send one request and return its reply once the status line and headers are in.

        ``wait_s`` bounds the wait for the headers (default ``timeout_s``): a server
        that answers only once the whole reply is made needs longer than a connect.
        The caller must use the reply as a context manager (or ``release`` it) so that
        its connection goes back to the pool or is closed.
        """
        wait = self.timeout_s if wait_s is None else wait_s
        request = b"".join(
            (
                f"POST {target} HTTP/1.1\r\n{self._fixed_headers}{_render(headers)}"
                f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1"),
                body,
            )
        )
        sock, reused = self._checkout()
        try:
            try:
                response = _exchange(sock, request, wait)
            except _STALE_ERRORS:
                if not reused:
                    raise
                sock.close()
                sock = self._connect()
                response = _exchange(sock, request, wait)
        except BaseException:
            sock.close()
            raise
        return Reply(self, sock, response)

    def close(self) -> None:
        """Close the idle connections; connections in use close when their reply is released.

        Calls made after ``close`` still work, each on a connection of its own.
        """
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    def _checkout(self) -> tuple[socket.socket, bool]:
        while True:
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None:
                return self._connect(), False
            if _idle_and_open(sock):
                return sock, True
            sock.close()

    def _checkin(self, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(sock)
                return
        sock.close()

    def _connect(self) -> socket.socket:
        route = self.route
        try:
            sock = socket.create_connection((route.host, route.port), self.timeout_s)
        except TimeoutError:
            raise  # a timeout stays a timeout, not a failed connect
        except OSError as exc:
            raise ConnectFailed(f"cannot connect to {route.host}:{route.port}: {exc}") from exc
        try:
            # Requests go out whole in one send; waiting to coalesce would only add latency.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if route.tunnel is not None:
                _open_tunnel(sock, route)
            if self._tls is not None:
                # The endpoint's name is checked (inside a tunnel too), never the proxy's.
                server_name = route.tunnel[0] if route.tunnel else route.host
                sock = self._tls.wrap_socket(sock, server_hostname=server_name)
        except TimeoutError:
            sock.close()
            raise  # as above
        except OSError as exc:
            sock.close()
            raise ConnectFailed(f"cannot open a connection to {route.host_header}: {exc}") from exc
        return sock


def _render(headers: dict[str, str]) -> str:
    """Header lines; a line break in a name or value would inject headers, so it is refused."""
    for name, value in headers.items():
        if any(c in value for c in "\r\n") or any(c in name for c in ":\r\n"):
            raise ValueError(f"header {name!r} has a line break or a colon where it must not")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items())


def _exchange(sock: socket.socket, request: bytes, wait_s: float) -> http.client.HTTPResponse:
    sock.settimeout(wait_s)  # a pooled socket keeps the last call's timeout otherwise
    sock.sendall(request)
    response = http.client.HTTPResponse(sock, method="POST")
    try:
        response.begin()  # status line and headers; skips any 1xx interim response
    except BaseException:
        response.close()
        raise
    return response


def _open_tunnel(sock: socket.socket, route: Route) -> None:
    """Ask the proxy for a ``CONNECT`` tunnel to the endpoint (TLS then runs inside it)."""
    host, port = route.tunnel or (route.host, route.port)
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = _render({"Host": authority, **route.proxy_headers})
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\n{lines}\r\n".encode("latin-1"))
    response = http.client.HTTPResponse(sock, method="CONNECT")
    try:
        response.begin()
    finally:
        response.close()
    if response.status != 200:
        status = f"{response.status} {response.reason}"
        raise OSError(f"proxy refused a tunnel to {authority}: {status}")


def _idle_and_open(sock: socket.socket) -> bool:
    """An idle keep-alive connection has nothing to read; readable means the server
    closed it (or broke protocol), so it must not carry a request."""
    poller = select.poll()  # not select(): descriptors above 1024 are normal with 250 threads
    poller.register(sock, select.POLLIN)
    return not poller.poll(0)


class Reply:
    """One response: status and headers now, the body read once, whole or as lines."""

    def __init__(
        self,
        transport: Transport,
        sock: socket.socket,
        response: http.client.HTTPResponse,
    ) -> None:
        self._transport = transport
        self._sock = sock
        self._response = response
        self._complete = False  # the body was read to its end: the connection can be reused
        self.status = response.status

    def header(self, name: str) -> str | None:
        return self._response.getheader(name)

    def set_read_timeout(self, seconds: float) -> None:
        """Bound the next reads of the body (a streamed reply's silence between chunks)."""
        self._sock.settimeout(seconds)

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
            self._transport._checkin(self._sock)
        else:
            with contextlib.suppress(OSError):
                response.close()
            self._sock.close()

    def __enter__(self) -> Reply:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
