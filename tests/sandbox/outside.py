"""A stand-in for the outside world, made by the test: a network namespace joined to
this host by a veth pair, with a listener that answers a banner.

The namespace holds two addresses on one link: one from TEST-NET-2
(198.51.100.0/24, which no real network routes, so it stands in for "a public
server") and one from 10.0.0.0/8 (a private LAN server). Traffic from a
sandbox reaches both the way real egress would — forwarded by this host and
masqueraded — so the egress rules alone decide which one answers. The host
end carries an address of its own in each /30: that is "this host's public
address", which sandboxes must not reach either.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# On each connection: the banner, and the peer's address on stdout.
SERVER = (
    "import socket, sys\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 0)); s.listen(16)\n"
    "print(s.getsockname()[1], flush=True)\n"
    "while True:\n"
    "    c, peer = s.accept(); c.sendall(b'outside\\n'); c.close()\n"
    "    print(peer[0], flush=True)\n"
)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)  # noqa: S603,S607


@dataclass
class Outside:
    namespace: str
    public_host: str  # this host's end (its "public" address)
    public_server: str
    private_host: str
    private_server: str
    port: int
    server: subprocess.Popen[str]

    def peers(self) -> list[str]:
        """Who connected so far (read after the server is stopped)."""
        self.server.kill()
        out, _ = self.server.communicate(timeout=10)
        return out.split()


@contextmanager
def outside_world() -> Iterator[Outside]:
    """Create the namespace, link, addresses and server; always removed on exit."""
    pid = os.getpid()
    tag = f"lfo{pid % 100000}"
    host_link, peer = f"{tag}h", f"{tag}n"
    # Per-process /30s, so parallel test runs on one machine do not collide.
    pub = 4 * (pid % 64)
    priv_b, priv_c = 100 + pid % 100, (pid // 100) % 64 * 4
    addresses = {
        "public_host": f"198.51.100.{pub + 1}",
        "public_server": f"198.51.100.{pub + 2}",
        "private_host": f"10.{priv_b}.{priv_c}.1",
        "private_server": f"10.{priv_b}.{priv_c}.2",
    }
    subprocess.run(["ip", "netns", "del", tag], capture_output=True, check=False)  # noqa: S603,S607
    subprocess.run(["ip", "link", "del", host_link], capture_output=True, check=False)  # noqa: S603,S607
    server: subprocess.Popen[str] | None = None
    try:
        _ip("netns", "add", tag)
        _ip("link", "add", host_link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", tag)
        _ip("addr", "add", f"{addresses['public_host']}/30", "dev", host_link)
        _ip("addr", "add", f"{addresses['private_host']}/30", "dev", host_link)
        _ip("link", "set", host_link, "up")
        _ip("-n", tag, "addr", "add", f"{addresses['public_server']}/30", "dev", peer)
        _ip("-n", tag, "addr", "add", f"{addresses['private_server']}/30", "dev", peer)
        _ip("-n", tag, "link", "set", peer, "up")
        _ip("-n", tag, "link", "set", "lo", "up")
        server = subprocess.Popen(  # noqa: S603
            ["ip", "netns", "exec", tag, sys.executable, "-c", SERVER],  # noqa: S607
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield Outside(namespace=tag, port=port, server=server, **addresses)
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait(10)
        subprocess.run(["ip", "netns", "del", tag], capture_output=True, check=False)  # noqa: S603,S607
        subprocess.run(["ip", "link", "del", host_link], capture_output=True, check=False)  # noqa: S603,S607
