"""The model client honours HTTP(S)_PROXY / ALL_PROXY / NO_PROXY, as the openai SDK did."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from services.model_sim.server import SimServerHandle
from services.worker.llm.client import ModelClient
from services.worker.llm.proxy import Route, route_for
from tests.worker.llm.http_peers import relay, self_signed_cert, tls_sim

USER = [{"role": "user", "content": "Say hello."}]
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


class TestRoutes:
    def test_without_a_proxy_the_endpoint_is_dialled(self) -> None:
        assert route_for("http://127.0.0.1:8100/v1/") == Route(
            "127.0.0.1", 8100, False, "127.0.0.1:8100", "/v1"
        )

    def test_an_http_endpoint_goes_through_a_forwarding_proxy_with_credentials(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTP_PROXY", "http://bob:p%40ss@proxy.internal:3128")
        route = route_for("http://vllm.internal:8000/v1")
        assert (route.host, route.port, route.tunnel) == ("proxy.internal", 3128, None)
        assert route.target_prefix == "http://vllm.internal:8000/v1"
        expected = "Basic " + base64.b64encode(b"bob:p@ss").decode()
        assert route.proxy_headers == {"Proxy-Authorization": expected}

    def test_an_https_endpoint_goes_through_a_tunnel(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ALL_PROXY", "proxy.internal:3128")  # no scheme: http
        route = route_for("https://api.example.com/v1")
        assert (route.host, route.port) == ("proxy.internal", 3128)
        assert route.tunnel == ("api.example.com", 443) and route.target_prefix == "/v1"
        assert route.host_header == "api.example.com"

    def test_no_proxy_hosts_are_dialled(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
        monkeypatch.setenv("NO_PROXY", "localhost,.example.com")
        assert route_for("https://api.example.com/v1").host == "api.example.com"

    def test_a_proxy_we_cannot_speak_to_is_refused_not_bypassed(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("ALL_PROXY", "socks5://proxy.internal:1080")
        with pytest.raises(ValueError, match="only http:// proxies"):
            route_for("https://api.example.com/v1")


class TestThroughAProxy:
    def test_an_http_endpoint_is_reached_through_the_proxy(
        self, sim: SimServerHandle, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with relay((sim.host, sim.port), proxy=True) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://bob:pw@127.0.0.1:{proxy.port}")
            client = ModelClient(sim.base_url, "k", max_retries=0)
            replies = [client.complete(model="m", messages=USER, max_tokens=8) for _ in range(3)]
            client.close()
        assert all(r.finish_reason for r in replies)
        # Only our client's connections: a span exporter of this test process that honours
        # HTTP_PROXY has sent its own POSTs (with the same credentials) through this proxy.
        ours = proxy.carrying(f"POST {sim.base_url}/chat/completions HTTP/1.1".encode())
        # A reused connection the server closes just as a request goes out is resent once on
        # a new connection (transport's guarantee). So: every request carries the
        # credentials, and only a resend opens another connection.
        posts = sum(sent.count(f"POST {sim.base_url}/".encode()) for sent in ours)
        assert posts >= 3
        assert sum(sent.count(b"Proxy-Authorization: Basic Ym9iOnB3") for sent in ours) == posts
        assert len(ours) == 1 + (posts - 3)

    def test_an_https_endpoint_is_reached_through_a_tunnel(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        cert, key = self_signed_cert(tmp_path)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        with tls_sim(cert, key) as port, relay(("127.0.0.1", port), proxy=True) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
            client = ModelClient(f"https://localhost:{port}/v1", "k", max_retries=0)
            reply = client.complete(model="m", messages=USER, max_tokens=8)
            client.close()
        assert reply.finish_reason
        (tunnel,) = proxy.carrying(f"CONNECT localhost:{port} HTTP/1.1".encode())
        assert b"chat/completions" not in tunnel  # the request itself went encrypted

    def test_a_no_proxy_endpoint_is_dialled_directly(
        self, sim: SimServerHandle, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with relay((sim.host, sim.port), proxy=True) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            client = ModelClient(sim.base_url, "k", max_retries=0)
            reply = client.complete(model="m", messages=USER, max_tokens=8)
            client.close()
        assert reply.finish_reason
        assert b"chat/completions" not in proxy.sent  # dialled directly, not through the proxy
