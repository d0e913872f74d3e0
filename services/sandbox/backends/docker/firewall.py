"""The egress rules of the sandbox network: packets from its bridge may leave for the
outside world, never for this host or a private range.

Keyed on the network's bridge interface (a name Leaflab chooses), in the
tables dockerd itself manages:

* ``DOCKER-USER`` (forwarded traffic; Docker runs it first and never flushes
  it) jumps to a chain of our own that rejects every non-public destination:
  RFC 1918, loopback, link-local, CGNAT, "this network", multicast, reserved.
* ``INPUT`` rejects everything from the bridge: that is traffic to any
  address of this host (the bridge gateway, its public address, its other
  interfaces), so no host service is reachable, whatever it binds.
* IPv6 (the network is IPv4-only, but link-local addresses exist anyway):
  ``INPUT`` and ``FORWARD`` reject everything from the bridge.

Rejections answer with "administratively prohibited", so code in the sandbox
fails at once with EHOSTUNREACH instead of hanging until a timeout.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from services.sandbox.backends.base import SandboxNetworkUnavailable

# Destinations a network-enabled sandbox never reaches (the host itself is INPUT's).
BLOCKED_V4 = (
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # RFC 1918
    "100.64.0.0/10",  # carrier-grade NAT
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local (cloud metadata services live here)
    "172.16.0.0/12",  # RFC 1918 (Docker's own networks too)
    "192.0.0.0/24",  # IETF protocol assignments
    "192.168.0.0/16",  # RFC 1918
    "198.18.0.0/15",  # benchmarking
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, broadcast
)
REJECT_V4 = ["-j", "REJECT", "--reject-with", "icmp-admin-prohibited"]
REJECT_V6 = ["-j", "REJECT", "--reject-with", "icmp6-adm-prohibited"]
DOCKER_USER = "DOCKER-USER"
COMMAND_TIMEOUT_S = 20.0
IPV6_PRESENT = Path("/proc/net/if_inet6")


class EgressUnavailable(SandboxNetworkUnavailable):
    """The egress rules cannot be installed or verified here."""


def chain_name(bridge: str) -> str:
    return f"LEAFLAB-{bridge}"  # <= 28 characters for a bridge name of <= 15


@dataclass(frozen=True)
class Firewall:
    """The rules for one bridge, installed with ``iptables``/``ip6tables``."""

    bridge: str
    iptables: str = "iptables"
    ip6tables: str = "ip6tables"

    @property
    def chain(self) -> str:
        return chain_name(self.bridge)

    def _chain_rules(self) -> list[list[str]]:
        rules = [["-d", cidr, *REJECT_V4] for cidr in BLOCKED_V4]
        return [*rules, ["-j", "RETURN"]]

    def _top_rules(self) -> list[tuple[str, str, list[str]]]:
        """(binary, chain, rule) of the rules that must sit at the top of a built-in chain."""
        rules = [
            (self.iptables, DOCKER_USER, ["-i", self.bridge, "-j", self.chain]),
            (self.iptables, "INPUT", ["-i", self.bridge, *REJECT_V4]),
        ]
        if IPV6_PRESENT.exists():
            rules += [
                (self.ip6tables, "INPUT", ["-i", self.bridge, *REJECT_V6]),
                (self.ip6tables, "FORWARD", ["-i", self.bridge, *REJECT_V6]),
            ]
        return rules

    def installed(self) -> bool:
        """Whether every rule is in place (a firewall reload may have removed them)."""
        listed = _run(self.iptables, "-S", self.chain, check=False)
        expected = [f"-N {self.chain}"] + [
            f"-A {self.chain} " + " ".join(r) for r in self._chain_rules()
        ]  # `iptables -S` prints a rule back exactly as we add it
        if listed is None or listed.splitlines() != expected:
            return False
        return all(_run(b, "-C", c, *r, check=False) is not None for b, c, r in self._top_rules())

    def install(self) -> None:
        """Install (or repair) the rules; raises :class:`EgressUnavailable` when it cannot."""
        docker_user = _call(self.iptables, "-S", DOCKER_USER)
        if docker_user.returncode != 0 and "by that name" in docker_user.stderr:
            raise EgressUnavailable(
                f"no {DOCKER_USER} chain in `{self.iptables}`: dockerd does not manage iptables "
                "in this network namespace (dockerd with iptables=false, or a sandbox worker in "
                "a container without the host's network), so sandbox egress cannot be "
                "filtered; network-enabled execs are refused"
            )
        _run(self.iptables, "-S", DOCKER_USER)  # any other failure (no root) says why
        if _run(self.iptables, "-S", self.chain, check=False) is None:
            _run(self.iptables, "-N", self.chain)
        else:
            _run(self.iptables, "-F", self.chain)
        for rule in self._chain_rules():
            _run(self.iptables, "-A", self.chain, *rule)
        for binary, chain, rule in self._top_rules():
            if _run(binary, "-C", chain, *rule, check=False) is None:
                _run(binary, "-I", chain, "1", *rule)

    def remove(self) -> None:
        """Take every rule out again (tests, and removing the network)."""
        for binary, chain, rule in self._top_rules():
            while _run(binary, "-C", chain, *rule, check=False) is not None:
                _run(binary, "-D", chain, *rule)
        if _run(self.iptables, "-S", self.chain, check=False) is not None:
            _run(self.iptables, "-F", self.chain)
            _run(self.iptables, "-X", self.chain)


def _call(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one iptables command, waiting for the xtables lock."""
    try:
        return subprocess.run(  # noqa: S603 - a configured binary and our own arguments
            [binary, "-w", "5", *args],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EgressUnavailable(
            f"cannot run `{binary}` to install the sandbox egress rules ({exc}); "
            "network-enabled execs are refused"
        ) from exc


def _run(binary: str, *args: str, check: bool = True) -> str | None:
    """One iptables command's stdout, or None when it failed and ``check`` is off.
    Failures with ``check`` on raise EgressUnavailable."""
    done = _call(binary, *args)
    argv = [binary, "-w", "5", *args]
    if done.returncode == 0:
        return done.stdout
    if not check:
        return None
    raise EgressUnavailable(
        f"`{' '.join(argv)}` failed ({done.stderr.strip() or done.returncode}): the sandbox "
        "egress rules cannot be installed (the sandbox worker needs root or CAP_NET_ADMIN), "
        "so network-enabled execs are refused"
    )
