"""Which addresses a user-chosen URL may never reach, and host spellings refused outright.

Loopback, private, link-local, carrier-grade NAT, multicast, reserved and
cloud metadata addresses are refused, and so is every IPv6 form that embeds
one of them (IPv4-mapped/compatible, NAT64, 6to4, Teredo). Hosts written as
non-canonical IPv4 (2130706433, 0x7f.1, 0177.0.0.1, 127.1), with zone ids, or
naming a metadata service are refused before anything resolves them. The
fetching side lives in services/common/net_guard.py.

A URL whose form is broken (a bracketed host that is no IPv6 address, an
unclosed bracket, a port out of range, a host no IDNA encoder accepts, an
empty label, more than ``MAX_URL_CHARS``) is :class:`InvalidUrl` — a refusal
with a reason, never a parser's ``ValueError`` escaping as a crash.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges that ipaddress' is_global misses or that deserve their own reason.
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
# Cloud metadata endpoints, some of which sit in otherwise "global" space.
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254")
)
# Metadata services also answer by name; refuse the names themselves, so a
# resolver that maps them somewhere odd (split-horizon DNS) changes nothing.
_METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
# A host made only of digits, hex, "x" and dots is an IPv4 literal to
# inet_aton (2130706433, 0x7f.1, 017700000001, 127.1); only dotted quads in
# plain decimal are accepted, so the address checked is the one a reader sees.
_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$", re.IGNORECASE)
_DOTTED_QUAD = re.compile(
    r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$"
)


MAX_URL_CHARS = 2000
MAX_HOST_CHARS = 253  # a DNS name, dots included (RFC 1035)
MAX_LABEL_CHARS = 63


class AddressRefused(Exception):
    """The URL may not be fetched; ``str(exc)`` is a reason fit to show the user."""


class InvalidUrl(AddressRefused):
    """The URL's form is broken (not a policy refusal): fix the URL, not the address."""


@dataclass(frozen=True)
class UrlParts:
    scheme: str
    host: str  # as urlsplit reads it: lower-case, no brackets
    port: int | None


def check_url_form(url: object) -> UrlParts:
    """The URL's scheme, host and port, or :class:`InvalidUrl` saying what is wrong.

    Both parsers that will read the URL (``urllib``'s for the checks, httpx's for
    the connection) must accept it, so what is checked is what is fetched; the
    host spelling is then checked by :func:`check_host_literal`.
    """
    if not isinstance(url, str):
        raise InvalidUrl("the URL must be a string")
    if len(url) > MAX_URL_CHARS:
        raise InvalidUrl(f"the URL is longer than {MAX_URL_CHARS} characters")
    if any(ord(ch) <= 32 or ord(ch) == 127 for ch in url):
        raise InvalidUrl("the URL contains spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port out of range or not a number
        # The fetching parser: brackets, ports, and IDNA (decoded only when .host is read).
        _ = httpx.URL(url).host
    except (ValueError, httpx.InvalidURL) as exc:  # idna.IDNAError is a ValueError
        raise InvalidUrl(f"the URL is malformed ({_short(exc)})") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidUrl("only http and https URLs can be fetched")
    if not parts.hostname:
        raise InvalidUrl("the URL has no host")
    if port == 0:
        raise InvalidUrl("port 0 cannot be fetched")
    bracketed = parts.netloc.rpartition("@")[2].startswith("[")
    _check_host_form(parts.hostname, bracketed=bracketed)
    return UrlParts(parts.scheme, parts.hostname, port)


def _check_host_form(host: str, *, bracketed: bool) -> None:
    if bracketed:
        return  # urlsplit and httpx both checked it is an IPv6 (or IPvFuture) literal
    try:
        ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise InvalidUrl("the host is not a valid internationalised name") from None
    labels = ascii_host.rstrip(".").split(".")
    if len(ascii_host) > MAX_HOST_CHARS or any(
        not 0 < len(label) <= MAX_LABEL_CHARS for label in labels
    ):
        raise InvalidUrl(
            f"the host is no valid name (labels of 1-{MAX_LABEL_CHARS} characters, "
            f"at most {MAX_HOST_CHARS} in all)"
        )


def _short(exc: Exception) -> str:
    # The parser's words may quote the host: ASCII only (a lone surrogate would
    # make the JSON error answer itself fail to encode).
    text = str(exc).encode("ascii", "backslashreplace").decode("ascii")
    return text[:120] or type(exc).__name__


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` must not be connected to, or ``None`` when it is public."""
    if address in _METADATA:
        return "a cloud metadata address"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = refusal_reason(embedded)
            return f"an IPv6 form of {embedded}, {inner}" if inner else None
        if address in _TEREDO:
            return "a Teredo address (its IPv4 endpoint cannot be checked)"
        if address in _NAT64_LOCAL:
            return "a local-use NAT64 address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if address.is_private:
        return "a private address"
    if address.is_reserved or not address.is_global:
        return "a reserved or non-global address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 transition form carries, if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    packed = address.packed
    if address in _NAT64:
        return ipaddress.IPv4Address(packed[12:])
    if address in _SIX_TO_FOUR:
        return ipaddress.IPv4Address(packed[2:6])
    # IPv4-compatible (::a.b.c.d, deprecated but still routed by some stacks).
    if packed[:12] == bytes(12) and int(address) > 1:
        return ipaddress.IPv4Address(packed[12:])
    return None


def check_host_literal(host: str) -> None:
    """Refuse non-canonical IPv4 literals and zone ids before anything resolves them."""
    if "%" in host:
        raise AddressRefused("IPv6 zone identifiers are not allowed in URLs")
    if host.lower().rstrip(".") in _METADATA_HOSTS:
        raise AddressRefused(f"{host!r} is a cloud metadata service")
    if _NUMERIC_HOST.match(host) and not _DOTTED_QUAD.match(host):
        raise AddressRefused(f"{host!r} is not a plain dotted-quad IPv4 address")
