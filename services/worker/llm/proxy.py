"""Where the model client's TCP connections go: to the endpoint, or through an HTTP proxy.

The environment's ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY``
are honoured as the ``openai`` SDK (httpx) honoured them, read once when the
client is built: a plain-http endpoint is reached by sending absolute-form
requests to the proxy, an https endpoint through a ``CONNECT`` tunnel (TLS stays
end to end). Credentials in the proxy URL travel as ``Proxy-Authorization: Basic``.
Only ``http://`` proxies are supported; any other proxy scheme (TLS or SOCKS to
the proxy) is refused when the client is built rather than silently bypassed.
"""

from __future__ import annotations

import base64
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Route:
    """How to reach one endpoint.

    ``host``/``port`` is where the TCP connection goes (the endpoint or the proxy);
    ``tls`` says whether the endpoint speaks https; ``host_header`` names the
    endpoint (``Host`` header, ``CONNECT`` target); ``target_prefix`` starts the
    request target (``/v1``, or ``http://host:port/v1`` for a forwarding proxy);
    ``tunnel`` is the endpoint's host and port when an https endpoint sits behind a
    proxy; ``proxy_headers`` carry the proxy's credentials.
    """

    host: str
    port: int
    tls: bool
    host_header: str
    target_prefix: str
    tunnel: tuple[str, int] | None = None
    proxy_headers: dict[str, str] = field(default_factory=dict)


def route_for(base_url: str) -> Route:
    """The route to ``base_url`` under the current environment's proxy settings."""
    url = urlsplit(base_url)
    if url.scheme not in DEFAULT_PORTS or not url.hostname:
        raise ValueError(f"model endpoint must be an http(s) URL, not {base_url!r}")
    host, port = url.hostname, url.port or DEFAULT_PORTS[url.scheme]
    path = url.path.rstrip("/")
    tls = url.scheme == "https"
    named = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    if port != DEFAULT_PORTS[url.scheme]:
        named = f"{named}:{port}"
    proxy = _proxy_for(url)
    if proxy is None:
        return Route(host, port, tls, named, path)
    proxy_host, proxy_port, headers = proxy
    if tls:
        return Route(proxy_host, proxy_port, tls, named, path, (host, port), headers)
    # Absolute-form target: the proxy forwards to the host named in it.
    return Route(proxy_host, proxy_port, tls, named, f"http://{named}{path}", None, headers)


def _proxy_for(url: SplitResult) -> tuple[str, int, dict[str, str]] | None:
    proxies = urllib.request.getproxies_environment()
    raw = proxies.get(url.scheme) or proxies.get("all")
    if not raw or urllib.request.proxy_bypass(url.netloc):
        return None
    proxy = urlsplit(raw if "://" in raw else f"http://{raw}")
    if proxy.scheme != "http" or not proxy.hostname:
        raise ValueError(
            f"proxy {raw!r} for {url.scheme} endpoints is not supported: only http:// proxies"
        )
    headers = {}
    if proxy.username is not None:
        pair = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return proxy.hostname, proxy.port or 80, headers
