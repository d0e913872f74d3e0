"""Streamable-HTTP MCP servers are reached only through the address guard.

The MCP SDK speaks HTTP with ``httpx2`` (async); this module hands it a client
whose every connection goes through :class:`services.common.net_guard.NetGuard`
exactly as the research tools' fetches do: the host is resolved once inside
the connect, each answer checked (loopback, private, link-local, metadata … are
refused unless listed in ``LEAFLAB_WEB_ALLOW``), the socket opened to the
checked address and its peer checked again. No proxy from the environment
applies. :func:`check_server_url` refuses a URL before any session is opened,
so the refusal reads as one clear reason rather than a transport error.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2

from services.common.net_guard import AddressRefused, NetGuard, check_url, refusal_reason


class _GuardedAsyncBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, guard: NetGuard) -> None:
        self._guard = guard
        self._tcp = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        # getaddrinfo blocks: off the event loop, which serves every job's MCP calls.
        addresses = await anyio.to_thread.run_sync(self._guard.resolve, host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                stream = await self._tcp.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as exc:
                last = exc
                continue
            await self._check_peer(stream, host, port)
            return stream
        raise last or httpcore2.ConnectError(f"cannot connect to {host}")

    async def _check_peer(self, stream: httpcore2.AsyncNetworkStream, host: str, port: int) -> None:
        sock = stream.get_extra_info("socket")
        peer = ipaddress.ip_address(sock.getpeername()[0])
        if self._guard.allowed(host, port) or self._guard.allowed(str(peer), port):
            return
        reason = refusal_reason(peer)
        if reason:
            await stream.aclose()
            raise AddressRefused(f"refusing to talk to {host} ({peer}: {reason})")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise AddressRefused("unix sockets are not reachable from URLs")

    async def sleep(self, seconds: float) -> None:
        await self._tcp.sleep(seconds)


class GuardedAsyncTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport, its connection pool rebuilt on the guarded backend."""

    def __init__(self, guard: NetGuard) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            max_connections=8,
            network_backend=_GuardedAsyncBackend(guard),
        )


def guarded_client(guard: NetGuard, *, timeout_s: float) -> httpx2.AsyncClient:
    """A client for one MCP server (the SDK follows same-origin redirects itself)."""
    return httpx2.AsyncClient(
        transport=GuardedAsyncTransport(guard),
        timeout=httpx2.Timeout(timeout_s, read=max(timeout_s, 300.0)),
        trust_env=False,
        follow_redirects=False,
    )


def check_server_url(url: str, guard: NetGuard) -> None:
    """Refuse (AddressRefused) a URL whose host the guard would refuse, before connecting."""
    check_url(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    guard.resolve(host, port)
