"""Several "hosts" on one machine: network namespaces on a private bridge.

The root namespace is the data host (10.201.90.1 on the bridge: Postgres,
Redis and the model simulator listen there); every other host is a namespace
with one veth port on the bridge and an address in 10.201.90.0/24, nothing
else (no route out, no loopback services of the machine). A process started
with ``host.prefix()`` sees only what listens on the LAN. ``cut()`` takes a
host's bridge port down: its packets are dropped, as on a pulled cable.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

DATA_ADDR = "10.201.90.1"
SUBNET = "10.201.90.0/24"


class LanUnavailable(RuntimeError):
    """No privileges or kernel support for namespaces, veth pairs and bridges."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)  # noqa: S603,S607
    if done.returncode != 0:
        raise LanUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def _quiet(*argv: str) -> None:
    subprocess.run(list(argv), capture_output=True, check=False)  # noqa: S603


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str
    addr: str
    port_link: str  # the host's port on the bridge, in the root namespace

    def prefix(self) -> list[str]:
        """Prefix for an argv that must run on this host."""
        return ["ip", "netns", "exec", self.namespace]

    def cut(self) -> None:
        _ip("link", "set", self.port_link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.port_link, "up")


@contextmanager
def lan(names: list[str]) -> Iterator[dict[str, Host]]:
    """Create the bridge and one namespace per name; always removed on exit."""
    tag = f"lfm{os.getpid() % 10000}"
    bridge = f"{tag}br"
    hosts = {
        name: Host(name, f"{tag}-{name}", f"10.201.90.{10 + i}", f"{tag}p{i}")
        for i, name in enumerate(names)
    }
    # Docker sets the FORWARD policy to DROP and br_netfilter makes bridged
    # frames traverse it: host-to-host traffic on our bridge needs an accept.
    accept = ["FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{DATA_ADDR}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        _quiet("iptables", "-I", *accept)
        for i, host in enumerate(hosts.values()):
            peer = f"{tag}n{i}"
            _quiet("ip", "netns", "del", host.namespace)
            _ip("netns", "add", host.namespace)
            _ip("link", "add", host.port_link, "type", "veth", "peer", "name", peer)
            _ip("link", "set", host.port_link, "master", bridge)
            _ip("link", "set", host.port_link, "up")
            _ip("link", "set", peer, "netns", host.namespace)
            _ip("-n", host.namespace, "addr", "add", f"{host.addr}/24", "dev", peer)
            _ip("-n", host.namespace, "link", "set", peer, "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
        yield hosts
    finally:
        for host in hosts.values():
            _quiet("ip", "netns", "del", host.namespace)
            _quiet("ip", "link", "del", host.port_link)
        _quiet("iptables", "-D", *accept)
        _quiet("ip", "link", "del", bridge)
