"""The one outbound-address guard (SSRF) for every fetch of a user-chosen URL.

Library URL ingestion and the agent's research tools (services/worker/tools/web/)
use it: a URL someone else chose must never reach loopback, the private
network, link-local or carrier-grade NAT ranges, cloud metadata endpoints or
any IPv6 form that embeds one of those (IPv4-mapped/compatible, NAT64, 6to4,
Teredo). Which addresses and host spellings are refused is decided in
services/common/net_addresses.py.

The guarantee is about the address *actually connected to*: the host is
resolved once inside the connection itself (an httpcore network backend), every
resolved address is checked, the socket is opened to that checked address and
its peer is checked again. A second DNS answer (rebinding) is never asked for.
Redirects are followed by hand so each hop goes through the same check, and
bodies are capped in size and time.

``LEAFLAB_WEB_ALLOW`` (``host:port,…``) lets listed servers through — loopback
test pages or an intranet mirror — and nothing else.
"""

from __future__ import annotations

import io
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO
from urllib.parse import urljoin

import httpcore
import httpx

from services.common.net_addresses import (
    AddressRefused,
    InvalidUrl,
    IPAddress,
    check_host_literal,
    check_url_form,
    refusal_reason,
)

__all__ = [
    "AddressRefused",
    "FetchFailed",
    "Fetched",
    "GuardedTransport",
    "InvalidUrl",
    "NetGuard",
    "check_host_literal",
    "check_url",
    "check_url_form",
    "fetch",
    "fetch_to",
    "parse_allow_list",
    "refusal_reason",
]


class FetchFailed(AddressRefused):
    """The address was allowed but the fetch itself failed (timeout, network, status, size).

    A subclass so callers that only care about "not fetched" keep catching
    :class:`AddressRefused`; callers that retry read ``code`` and ``retryable``.
    """

    def __init__(
        self, message: str, *, code: str, retryable: bool, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.status = status


def parse_allow_list(text: str | None) -> frozenset[tuple[str, int]]:
    """``"127.0.0.1:8123, mirror.lab:80"`` → {("127.0.0.1", 8123), ("mirror.lab", 80)}."""
    entries: set[tuple[str, int]] = set()
    for raw in (text or "").split(","):
        item = raw.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError(f"LEAFLAB_WEB_ALLOW entry {item!r} is not host:port")
        entries.add((host.strip("[]").lower(), int(port)))
    return frozenset(entries)


@dataclass(frozen=True)
class NetGuard:
    """What may be connected to: public addresses plus the explicit allow list."""

    allow: frozenset[tuple[str, int]] = field(default_factory=frozenset)

    def allowed(self, host: str, port: int) -> bool:
        return (host.strip("[]").lower(), port) in self.allow

    def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Resolve once and check every answer; the caller connects to one of these."""
        check_host_literal(host)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            raise AddressRefused(f"cannot resolve host {host!r}") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(i[4][0]) for i in infos))
        if not addresses:
            raise AddressRefused(f"cannot resolve host {host!r}")
        if self.allowed(host, port):
            return addresses
        for address in addresses:
            if self.allowed(str(address), port):
                continue
            reason = refusal_reason(address)
            if reason:
                raise AddressRefused(f"refusing to connect to {host} ({address}: {reason})")
        return addresses


class _GuardedBackend(httpcore.NetworkBackend):
    """httpcore's TCP connect, to an address the guard resolved and approved."""

    def __init__(self, guard: NetGuard) -> None:
        self._guard = guard
        self._tcp = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._guard.resolve(host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                stream = self._tcp.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                last = exc
                continue
            self._check_peer(stream, host, port)
            return stream
        raise last or httpcore.ConnectError(f"cannot connect to {host}")

    def _check_peer(self, stream: httpcore.NetworkStream, host: str, port: int) -> None:
        sock = stream.get_extra_info("socket")
        peer = ipaddress.ip_address(sock.getpeername()[0])
        if not (self._guard.allowed(host, port) or self._guard.allowed(str(peer), port)):
            reason = refusal_reason(peer)
            if reason:
                stream.close()
                raise AddressRefused(f"refusing to talk to {host} ({peer}: {reason})")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise AddressRefused("unix sockets are not reachable from URLs")

    def sleep(self, seconds: float) -> None:
        self._tcp.sleep(seconds)


class _BodyStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        closer = getattr(self._stream, "close", None)
        if closer is not None:
            closer()


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport whose every connection goes through :class:`NetGuard`.

    Built on httpcore's public pool with a guarded network backend, so proxies
    from the environment never apply (a proxy would connect elsewhere).
    """

    def __init__(self, guard: NetGuard) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(),
            network_backend=_GuardedBackend(guard),
            max_connections=4,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            resp = self._pool.handle_request(core)
        except httpcore.TimeoutException as exc:
            raise httpx.TimeoutException(str(exc), request=request) from exc
        except httpcore.NetworkError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except httpcore.ProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        assert isinstance(resp.stream, Iterable)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_BodyStream(resp.stream),
            extensions=resp.extensions,
        )

    def close(self) -> None:
        self._pool.close()


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    content_type: str
    size: int


def fetch(
    url: str,
    *,
    guard: NetGuard,
    max_bytes: int,
    timeout_s: float,
    max_redirects: int = 5,
    headers: dict[str, str] | None = None,
) -> bytes:
    """GET ``url`` into memory; see :func:`fetch_to` (meant for small bodies)."""
    buffer = io.BytesIO()
    fetch_to(
        url,
        buffer,
        guard=guard,
        max_bytes=max_bytes,
        timeout_s=timeout_s,
        max_redirects=max_redirects,
        headers=headers,
    )
    return buffer.getvalue()


def fetch_to(
    url: str,
    out: BinaryIO,
    *,
    guard: NetGuard,
    max_bytes: int,
    timeout_s: float,
    max_redirects: int = 5,
    headers: dict[str, str] | None = None,
) -> Fetched:
    """GET ``url`` through the guard into ``out``, re-checking every redirect hop.

    Raises :class:`AddressRefused` for anything refused, and its subclass
    :class:`FetchFailed` when an allowed address was unreachable, too large
    (over ``max_bytes``), too slow (over ``timeout_s`` in all) or not 200;
    ``out`` may then hold a partial body, which the caller discards.
    """
    deadline = time.monotonic() + timeout_s
    with httpx.Client(
        transport=GuardedTransport(guard), timeout=timeout_s, follow_redirects=False
    ) as client:
        for _ in range(max_redirects + 1):
            check_url(url)
            try:
                with client.stream("GET", url, headers=headers) as response:
                    if response.is_redirect:
                        url = urljoin(url, response.headers.get("location", ""))
                        continue
                    if response.status_code != 200:
                        raise _status_failure(response.status_code)
                    size = _copy_capped(response, out, max_bytes, deadline)
                    return Fetched(
                        str(response.url), response.headers.get("content-type", ""), size
                    )
            except httpx.TimeoutException:
                raise FetchFailed(
                    f"no answer within {timeout_s:g} s", code="timeout", retryable=True
                ) from None
            except (httpx.InvalidURL, ValueError) as exc:  # a form both parsers missed
                raise InvalidUrl(f"could not fetch the URL: {type(exc).__name__}") from None
            except httpx.HTTPError as exc:
                raise FetchFailed(
                    f"could not fetch the URL: {type(exc).__name__}",
                    code="unreachable",
                    retryable=True,
                ) from None
    raise AddressRefused(f"more than {max_redirects} redirects")


def _status_failure(status: int) -> FetchFailed:
    # Rate limits and server errors pass; anything else will answer the same again.
    retryable = status == 429 or status >= 500
    return FetchFailed(
        f"the server answered {status}", code="http_status", retryable=retryable, status=status
    )


def check_url(url: str) -> None:
    """Everything refusable before the network: the URL's form (:class:`InvalidUrl`)
    and its host's spelling (:class:`AddressRefused`); the address comes later."""
    check_host_literal(check_url_form(url).host)


def _copy_capped(response: httpx.Response, out: BinaryIO, max_bytes: int, deadline: float) -> int:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchFailed(
            f"the file is larger than {max_bytes} bytes", code="too_large", retryable=False
        )
    size = 0
    for part in response.iter_bytes():
        size += len(part)
        if size > max_bytes:
            raise FetchFailed(
                f"the file is larger than {max_bytes} bytes", code="too_large", retryable=False
            )
        if time.monotonic() > deadline:
            raise FetchFailed("the download took too long", code="timeout", retryable=True)
        out.write(part)
    return size
