"""Fetch a PDF by URL: http/https only, no private or loopback addresses (checked
on every redirect hop), a size cap and a timeout."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import httpx


class FetchRefused(Exception):
    """The URL may not or could not be fetched; the message is for the user."""


def _check_host(host: str, port: int, *, allow_private: bool) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise FetchRefused(f"cannot resolve host {host!r}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        private = (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_multicast
            or address.is_reserved
            or address.is_unspecified
        )
        if private and not allow_private:
            raise FetchRefused(f"refusing to fetch from a private or local address ({address})")


def check_url(url: str, *, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchRefused("only http and https URLs can be ingested")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    _check_host(parts.hostname, port, allow_private=allow_private)


def fetch_pdf(url: str, *, max_bytes: int, timeout_s: float, allow_private: bool) -> bytes:
    """Download ``url`` (following up to 5 checked redirects) and return its bytes."""
    with httpx.Client(timeout=timeout_s, follow_redirects=False) as client:
        for _ in range(6):
            check_url(url, allow_private=allow_private)
            with client.stream("GET", url) as response:
                if response.is_redirect:
                    url = urljoin(url, response.headers.get("location", ""))
                    continue
                if response.status_code != 200:
                    raise FetchRefused(f"the server answered {response.status_code} for {url}")
                data = bytearray()
                for part in response.iter_bytes():
                    data.extend(part)
                    if len(data) > max_bytes:
                        raise FetchRefused(f"the file is larger than {max_bytes} bytes")
                return bytes(data)
    raise FetchRefused("too many redirects")
