"""The shared SSRF guard: classification tables, and loopback canaries that must
receive nothing whatever form the URL takes (only loopback is ever contacted)."""

from __future__ import annotations

import http.server
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from services.common.net_guard import (
    AddressRefused,
    FetchFailed,
    InvalidUrl,
    NetGuard,
    check_host_literal,
    check_url,
    fetch,
    parse_allow_list,
    refusal_reason,
)
from tests.fixtures.hostile_urls import MALFORMED_URLS

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.170.2",
    "100.64.0.1",
    "100.100.100.200",
    "100.127.255.255",
    "192.0.0.192",
    "0.0.0.0",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "198.18.0.1",
    "::",
    "::1",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",
    "::10.0.0.1",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b:1::1",
    "2002:7f00:1::1",
    "2002:a00:1::1",
    "2002:a9fe:a9fe::",
    "2001::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
]
ALLOWED = ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"]


class TestClassification:
    @pytest.mark.parametrize("address", REFUSED)
    def test_refused(self, address: str) -> None:
        assert refusal_reason(ipaddress.ip_address(address)) is not None

    @pytest.mark.parametrize("address", ALLOWED)
    def test_public_allowed(self, address: str) -> None:
        assert refusal_reason(ipaddress.ip_address(address)) is None

    @pytest.mark.parametrize(
        "host", ["2130706433", "0x7f.1", "127.1", "017700000001", "0177.0.0.1", "0x7f000001", "0"]
    )
    def test_non_canonical_ipv4_literals_refused(self, host: str) -> None:
        with pytest.raises(AddressRefused):
            check_host_literal(host)

    @pytest.mark.parametrize("host", ["8.8.8.8", "example.org", "1.2.3.4", "255.0.0.1"])
    def test_plain_hosts_pass_the_literal_check(self, host: str) -> None:
        check_host_literal(host)

    def test_allow_list_parsing(self) -> None:
        assert parse_allow_list(" 127.0.0.1:8123, [::1]:80 ,Mirror.lab:443") == {
            ("127.0.0.1", 8123),
            ("::1", 80),
            ("mirror.lab", 443),
        }
        with pytest.raises(ValueError, match="host:port"):
            parse_allow_list("127.0.0.1")


@dataclass
class Canary:
    """A listener on 127.0.0.1 and ::1 (same port) counting every connection."""

    port: int
    hits: list[str] = field(default_factory=list)


def _listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    sock.bind((host, port))
    sock.listen(16)
    return sock


def _accept_forever(sock: socket.socket, canary: Canary) -> None:
    while True:
        try:
            conn, peer = sock.accept()
        except OSError:
            return
        canary.hits.append(str(peer[0]))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret")
        conn.close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    v4 = _listen(socket.AF_INET, "127.0.0.1", 0)
    port = v4.getsockname()[1]
    v6 = _listen(socket.AF_INET6, "::1", port)
    found = Canary(port)
    for sock in (v4, v6):
        threading.Thread(target=_accept_forever, args=(sock, found), daemon=True).start()
    yield found
    v4.close()
    v6.close()


class _Redirector(http.server.BaseHTTPRequestHandler):
    """``/to?u=URL`` answers 302 to URL; ``/page`` answers a small body."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        if parts.path == "/page":
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")
            return
        status = int(parse_qs(parts.query).get("s", ["302"])[0])
        self.send_response(status)
        self.send_header("Location", parse_qs(parts.query)["u"][0])
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def redirector() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()


def bypass_forms(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/",
        f"http://localhost:{port}/",
        f"http://LOCALHOST:{port}/",
        f"http://localhost.:{port}/",
        f"http://2130706433:{port}/",
        f"http://017700000001:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://0x7f.1:{port}/",
        f"http://0x7f.0.0.1:{port}/",
        f"http://0177.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://127.0.1:{port}/",
        f"http://0:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://[::]:{port}/",
        f"http://[::1]:{port}/",
        f"http://[0:0:0:0:0:0:0:1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://[0:0:0:0:0:ffff:127.0.0.1]:{port}/",
        f"http://[::127.0.0.1]:{port}/",
        f"http://[64:ff9b::127.0.0.1]:{port}/",
        f"http://[2002:7f00:1::1]:{port}/",
        f"http://[::1%25lo]:{port}/",
        f"http://user:pw@127.0.0.1:{port}/",
        f"https://127.0.0.1:{port}/",
    ]


class TestCanaryReceivesNothing:
    def test_direct_forms(self, canary: Canary) -> None:
        forms = bypass_forms(canary.port)
        # Control: the canary counts a connection that nothing refuses, so its
        # silence below means the guard held (not that the canary is deaf).
        socket.create_connection(("127.0.0.1", canary.port), timeout=5).close()
        for _ in range(50):
            if canary.hits:
                break
            time.sleep(0.05)
        assert canary.hits == ["127.0.0.1"]
        canary.hits.clear()
        not_refused = []
        for url in forms:
            try:
                fetch(url, guard=NetGuard(), max_bytes=1000, timeout_s=5)
            except FetchFailed as failed:  # allowed through, then failed: not refused
                not_refused.append(f"{url} ({failed.code})")
            except AddressRefused:
                continue
            else:
                not_refused.append(url)
        assert not_refused == []
        assert canary.hits == []

    def test_redirects_from_an_allowed_server(self, canary: Canary, redirector: int) -> None:
        guard = NetGuard(parse_allow_list(f"127.0.0.1:{redirector}"))
        # The allowed server itself is reachable (so the refusals below are the guard's).
        page = f"http://127.0.0.1:{redirector}/page"
        assert fetch(page, guard=guard, max_bytes=100, timeout_s=5) == b"hello"
        hops = [
            f"http://127.0.0.1:{canary.port}/",
            f"http://localhost:{canary.port}/",
            f"http://[::1]:{canary.port}/",
            f"http://2130706433:{canary.port}/",
            f"//127.0.0.1:{canary.port}/",
        ]
        for target in hops:
            for status in (301, 302, 303, 307, 308):
                url = f"http://127.0.0.1:{redirector}/to?s={status}&u={target}"
                with pytest.raises(AddressRefused):
                    fetch(url, guard=guard, max_bytes=1000, timeout_s=5)
        # A chain: allowed → allowed → canary.
        inner = f"http://127.0.0.1:{redirector}/to?u=http://127.0.0.1:{canary.port}/"
        with pytest.raises(AddressRefused):
            fetch(
                f"http://127.0.0.1:{redirector}/to?u={inner.replace('&', '%26')}",
                guard=guard,
                max_bytes=1000,
                timeout_s=5,
            )
        assert canary.hits == []

    def test_allow_list_opens_only_the_listed_port(self, canary: Canary) -> None:
        guard = NetGuard(parse_allow_list(f"127.0.0.1:{canary.port + 1}"))
        with pytest.raises(AddressRefused):
            fetch(f"http://127.0.0.1:{canary.port}/", guard=guard, max_bytes=100, timeout_s=5)
        assert canary.hits == []
        # Listed: let through (the canary answers), which shows the fetch path works.
        listed = NetGuard(parse_allow_list(f"127.0.0.1:{canary.port}"))
        body = fetch(f"http://127.0.0.1:{canary.port}/", guard=listed, max_bytes=100, timeout_s=5)
        assert body == b"secret" and canary.hits == ["127.0.0.1"]

    def test_size_cap(self, redirector: int) -> None:
        guard = NetGuard(parse_allow_list(f"127.0.0.1:{redirector}"))
        with pytest.raises(AddressRefused, match="larger than 3 bytes"):
            fetch(f"http://127.0.0.1:{redirector}/page", guard=guard, max_bytes=3, timeout_s=5)


class TestMalformedUrls:
    """Broken forms are InvalidUrl with a reason, at the check and at the fetch."""

    @pytest.mark.parametrize("url", MALFORMED_URLS)
    def test_refused_before_any_network(self, url: str) -> None:
        with pytest.raises(InvalidUrl) as caught:
            check_url(url)
        assert str(caught.value).isascii() and str(caught.value)
        with pytest.raises(InvalidUrl):
            fetch(url, guard=NetGuard(), max_bytes=100, timeout_s=5)

    def test_a_redirect_to_a_malformed_url_is_refused(self, redirector: int) -> None:
        guard = NetGuard(parse_allow_list(f"127.0.0.1:{redirector}"))
        # httpx itself refuses a Location it cannot parse (a failed fetch); one it
        # parses but the form check does not accept is InvalidUrl. Never a ValueError.
        for target in ("http://[zz]/", "http://[::1", "http://a.example:99999/", "http://[v1.x]/"):
            url = f"http://127.0.0.1:{redirector}/to?u={quote(target, safe='')}"
            with pytest.raises(AddressRefused):
                fetch(url, guard=guard, max_bytes=100, timeout_s=5)
        url = f"http://127.0.0.1:{redirector}/to?u={quote('http://a.example:0/', safe='')}"
        with pytest.raises(InvalidUrl):
            fetch(url, guard=guard, max_bytes=100, timeout_s=5)

    @pytest.mark.parametrize(
        "url",
        [
            "http://a.example/x.pdf",
            "https://[2001:db8::1]:8443/x",
            "http://b\u00fccher.example/",  # an IDNA name that encodes
            "http://a.example./x",  # a trailing dot is a valid absolute name
            "http://" + "a" * 63 + ".example/",
        ],
    )
    def test_well_formed_urls_pass_the_form_check(self, url: str) -> None:
        check_url(url)
