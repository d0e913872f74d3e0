"""A second "host" for a worker: a network namespace joined to this one by a veth pair.

Only addresses inside a /30 that this module assigns exist on the link
(10.201.77.1 here, 10.201.77.2 in the namespace); nothing is routed anywhere
else, so a process in the namespace reaches exactly the servers listening on
10.201.77.1. Taking the host end down is a partition: packets are dropped, TCP
connections stall without an error, as on a real cut link; bringing it up heals
it and stalled connections resume.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

HOST_ADDR = "10.201.77.1"
NS_ADDR = "10.201.77.2"


class NetnsUnavailable(RuntimeError):
    """The kernel or our privileges do not allow creating namespaces and veth links."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)  # noqa: S603,S607
    if done.returncode != 0:
        raise NetnsUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


@dataclass(frozen=True)
class WorkerHost:
    namespace: str
    host_link: str

    def exec_prefix(self) -> list[str]:
        """Prefix for an argv that must run inside the namespace."""
        return ["ip", "netns", "exec", self.namespace]

    def cut(self) -> None:
        _ip("link", "set", self.host_link, "down")

    def heal(self) -> None:
        _ip("link", "set", self.host_link, "up")


@contextmanager
def worker_host() -> Iterator[WorkerHost]:
    """Create the namespace and link; always removed on exit, even after a failure."""
    tag = f"lff{os.getpid() % 100000}"
    host = WorkerHost(namespace=tag, host_link=f"{tag}h")
    peer = f"{tag}n"
    # A namespace left by a killed earlier run with our pid would make `add` fail.
    subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)  # noqa: S603,S607
    try:
        _ip("netns", "add", host.namespace)
        _ip("link", "add", host.host_link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", host.namespace)
        _ip("addr", "add", f"{HOST_ADDR}/30", "dev", host.host_link)
        _ip("link", "set", host.host_link, "up")
        _ip("-n", host.namespace, "addr", "add", f"{NS_ADDR}/30", "dev", peer)
        _ip("-n", host.namespace, "link", "set", peer, "up")
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        yield host
    finally:
        # Deleting the namespace destroys its end of the veth, which removes the pair.
        subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)  # noqa: S603,S607
        subprocess.run(["ip", "link", "del", host.host_link], capture_output=True, check=False)  # noqa: S603,S607
