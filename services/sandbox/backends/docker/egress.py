"""The Docker network of network-enabled sandboxes, and the guarantee that comes with it.

"Network" for model code means the outside world, never this host or a
private range. Docker's default bridge gives neither: its gateway is this
host, where every service bound to 0.0.0.0 answers. So network-enabled
containers join a network Leaflab makes (``sandbox_egress_network``) with a
bridge of a name we choose, inter-container traffic off, and the egress rules
of :mod:`firewall` keyed on that bridge.

Why packet filtering and not an egress proxy applying ``net_guard``: model
code opens raw sockets (pip, git, an API client that ignores proxy
variables), and a proxy only filters what is sent through it; the kernel
filters everything. dockerd here manages iptables itself (it has a
``DOCKER-USER`` chain), so the rules live beside Docker's own.

When the rules cannot be installed or verified (no root, no iptables, dockerd
without iptables), a network-enabled exec is refused with
``sandbox_network_unavailable`` — it never falls back to the default bridge.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from services.sandbox.backends.docker.firewall import EgressUnavailable, Firewall
from services.sandbox.settings import SandboxSettings

log = logging.getLogger(__name__)

LABEL_EGRESS = "leaflab.sandbox.egress"
OPT_BRIDGE = "com.docker.network.bridge.name"
OPT_ICC = "com.docker.network.bridge.enable_icc"
# Rules can be removed under us (a firewall reload): re-checked this often, before execs.
VERIFY_EVERY_S = 10.0
# One network and rule set per machine, whichever worker process makes it first.
LOCK_FILE = Path("/run/lock") if Path("/run/lock").is_dir() else Path(tempfile.gettempdir())


def bridge_name(network: str) -> str:
    """A stable interface name for ``network`` (Linux allows 15 characters)."""
    return "lfsb" + hashlib.sha256(network.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class EgressNetwork:
    name: str
    bridge: str
    gateway: str  # the host's address on it: what the rules keep sandboxes away from


@contextmanager
def _machine_lock(name: str) -> Iterator[None]:
    path = LOCK_FILE / f"leaflab-egress-{bridge_name(name)}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Egress:
    """Makes the sandbox network and its rules on first use, re-verifies them every
    ``VERIFY_EVERY_S``; thread-safe."""

    def __init__(self, client: docker.DockerClient, settings: SandboxSettings) -> None:
        self.client = client
        self.name = settings.sandbox_egress_network
        self.firewall = Firewall(
            bridge_name(self.name),
            iptables=settings.sandbox_egress_iptables,
            ip6tables=settings.sandbox_egress_ip6tables,
        )
        self._lock = threading.Lock()
        self._verified_at: float | None = None

    def network(self) -> str:
        """The network name for a network-enabled container, once its rules are in place;
        raises :class:`EgressUnavailable` otherwise."""
        with self._lock:
            now = time.monotonic()
            if self._verified_at is not None and now - self._verified_at < VERIFY_EVERY_S:
                return self.name
            self._verified_at = None
            with _machine_lock(self.name):
                ensure_network(self.client, self.name, self.firewall.bridge)
                if not self.firewall.installed():
                    log.warning("installing the sandbox egress rules on %s", self.firewall.bridge)
                    self.firewall.install()
                    if not self.firewall.installed():
                        raise EgressUnavailable(
                            "the sandbox egress rules do not stay installed "
                            f"(bridge {self.firewall.bridge}); network-enabled execs are refused"
                        )
            self._verified_at = time.monotonic()
            return self.name


def ensure_network(client: docker.DockerClient, name: str, bridge: str) -> EgressNetwork:
    """The sandbox network, created when missing; one made otherwise is refused."""
    try:
        attrs = client.api.inspect_network(name)
    except docker.errors.NotFound:
        try:
            client.api.create_network(
                name,
                driver="bridge",
                options={OPT_BRIDGE: bridge, OPT_ICC: "false"},
                labels={LABEL_EGRESS: "1"},
                check_duplicate=True,
            )
        except docker.errors.APIError as exc:
            raise EgressUnavailable(f"cannot create the sandbox network {name}: {exc}") from exc
        attrs = client.api.inspect_network(name)
    options = attrs.get("Options") or {}
    if options.get(OPT_BRIDGE) != bridge or options.get(OPT_ICC) != "false":
        raise EgressUnavailable(
            f"Docker network {name} exists but was not made by Leaflab (bridge "
            f"{options.get(OPT_BRIDGE)!r}, want {bridge!r}, inter-container traffic off): "
            f"remove it (`docker network rm {name}`) or set LEAFLAB_SANDBOX_EGRESS_NETWORK"
        )
    configs = (attrs.get("IPAM") or {}).get("Config") or []
    gateway = next((str(c["Gateway"]) for c in configs if c.get("Gateway")), "")
    return EgressNetwork(name=name, bridge=bridge, gateway=gateway)


def remove_egress(client: docker.DockerClient, settings: SandboxSettings) -> None:
    """Remove the network and its rules (tests; an operator retiring a network name)."""
    name = settings.sandbox_egress_network
    firewall = Firewall(
        bridge_name(name),
        iptables=settings.sandbox_egress_iptables,
        ip6tables=settings.sandbox_egress_ip6tables,
    )
    with _machine_lock(name):
        try:
            client.api.remove_network(name)
        except docker.errors.NotFound:
            pass
        firewall.remove()
