"""The model client's HTTP path over real sockets: keep-alive, chunked streams, TLS, errors."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from services.model_sim.server import SimServerHandle
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient
from services.worker.llm.errors import ModelError
from services.worker.llm.types import ModelResponse
from tests.worker.llm.http_peers import Canned, canned, relay, self_signed_cert, tls_sim

USER = [{"role": "user", "content": "Say hello."}]
QUICK = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)


def events(*chunks: object, done: bool = True, eol: bytes = b"\n") -> bytes:
    """A server-sent event stream of ``chunks`` (JSON) and ``[DONE]``."""
    lines = [b"data: " + json.dumps(c, ensure_ascii=False).encode() for c in chunks]
    if done:
        lines.append(b"data: [DONE]")
    return b"".join(line + eol + eol for line in lines)


def delta(content: str) -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}}],
    }


FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}


def pieces_of(body: bytes, *cuts: int) -> list[bytes]:
    edges = [0, *cuts, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def complete(client: ModelClient, **kwargs: Any) -> ModelResponse:
    return client.complete(model="m", messages=USER, max_tokens=16, **kwargs)


def call_once(base_url: str, *, stream: bool = True, **kwargs: Any) -> ModelResponse:
    """One call on a client of its own, closed afterwards."""
    client = ModelClient(base_url, "k", **kwargs)
    try:
        return complete(client, stream=stream)
    finally:
        client.close()


class TestKeepAlive:
    def test_sequential_calls_share_one_connection(self, sim: SimServerHandle) -> None:
        with relay((sim.host, sim.port)) as peer:
            client = ModelClient(f"{peer.url}/v1", "k", timeout_s=5, retry_policy=QUICK)
            for i in range(10):
                assert complete(client, stream=i % 2 == 0).content
            client.close()
        assert peer.accepted == 1

    def test_concurrent_calls_open_at_most_one_connection_each(self, sim: SimServerHandle) -> None:
        with relay((sim.host, sim.port)) as peer:
            client = ModelClient(f"{peer.url}/v1", "k", timeout_s=5, retry_policy=QUICK)
            with ThreadPoolExecutor(8) as pool:
                replies = list(pool.map(lambda i: complete(client), range(80)))
            client.close()
        assert len(replies) == 80
        assert peer.accepted <= 8

    def test_a_connection_the_server_closed_while_idle_is_replaced(
        self, sim: SimServerHandle
    ) -> None:
        with relay((sim.host, sim.port)) as peer:
            client = ModelClient(f"{peer.url}/v1", "k", timeout_s=5, retry_policy=QUICK)
            complete(client)
            peer.drop_all()  # the server's keep-alive timeout
            reply = complete(client)
            client.close()
        assert reply.attempts == 1
        assert peer.accepted == 2

    def test_a_connection_closed_as_the_request_arrives_is_resent_once_fresh(
        self, sim: SimServerHandle
    ) -> None:
        retries: list[ModelError] = []
        with relay((sim.host, sim.port)) as peer:
            client = ModelClient(
                f"{peer.url}/v1",
                "k",
                timeout_s=5,
                retry_policy=QUICK,
                on_retry=lambda err, wait: retries.append(err),
            )
            complete(client)
            peer.close_on_next_request = True
            reply = complete(client)
            client.close()
        assert reply.attempts == 1 and not retries
        assert peer.accepted == 2


class TestChunkedStreams:
    def test_events_cut_anywhere_across_chunks(self) -> None:
        # CRLF line ends; the first event's JSON spans two data lines (joined by a newline);
        # cuts inside a CRLF, inside a UTF-8 character and inside the JSON.
        body = events(delta("héllo"), delta(" wörld ✓"), FINISH, USAGE, eol=b"\r\n")
        body = body.replace(b'"model": "m", ', b'"model": "m",\r\ndata: ', 1)
        cuts = [body.index(b"\r\n") + 1, body.index("é".encode()) + 1, body.index(b"w\xc3") + 2]
        cuts += [body.index(b"finish_reason") + 3]
        with canned(Canned(pieces_of(body, *sorted(cuts)))) as server:
            client = ModelClient(server.base_url, "k", timeout_s=5, max_retries=0)
            tokens: list[str] = []
            first = complete(client, on_token=tokens.append)
            second = complete(client)
            client.close()
        assert tokens == ["héllo", " wörld ✓"]
        assert first.content == second.content == "héllo wörld ✓"
        assert first.usage.output_tokens == 3 and first.finish_reason == "stop"
        assert server.connections == 1  # a chunked reply read to its end keeps the connection

    def test_one_byte_chunks_and_no_done_marker(self) -> None:
        body = events(delta("a"), delta("b"), FINISH, done=False)
        with canned(Canned([body[i : i + 1] for i in range(len(body))], pause_s=0)) as server:
            reply = call_once(server.base_url, max_retries=0)
        assert reply.content == "ab" and reply.usage.estimated

    @pytest.mark.parametrize(
        ("body", "error_type"),
        [
            (events(delta("a"), {"error": {"message": "engine died"}}), "stream_error"),
            (events(delta("a")).replace(b'"a"', b'"a'), "bad_response"),
        ],
    )
    def test_broken_streams_are_typed(self, body: bytes, error_type: str) -> None:
        with canned(Canned([body])) as server:
            with pytest.raises(ModelError) as caught:
                call_once(server.base_url, max_retries=0)
        assert caught.value.error_type == error_type and caught.value.retryable

    def test_a_stream_without_a_finish_reason_is_resent_once_without_streaming(self) -> None:
        whole = json.dumps({"choices": [{"message": {"content": "whole"}}]}).encode()
        replies = [Canned([events(delta("a"), done=True)]), Canned([whole], chunked=False)]
        with canned(*replies) as server:
            reply = call_once(server.base_url, max_retries=0)
        assert reply.content == "whole" and reply.extra["resent_without_stream"]
        assert [json.loads(r.body).get("stream") for r in server.requests] == [True, None]

    def test_a_steady_stream_longer_than_the_timeout_is_read_whole(self) -> None:
        # Each read is quick; the whole reply takes 1.2 s, over the 0.5 s timeout.
        body = events(*[delta(f"t{i} ") for i in range(12)], FINISH)
        pieces = pieces_of(body, *range(100, len(body), 100))
        with canned(Canned(pieces, pause_s=0.1)) as server:
            reply = call_once(server.base_url, timeout_s=0.5, idle_timeout_s=0.5, max_retries=0)
        assert reply.content == "".join(f"t{i} " for i in range(12))
        assert reply.finish_reason == "stop" and len(server.requests) == 1


def whole(status: int, body: bytes, **headers: str) -> Canned:
    return Canned([body], status=status, headers=headers, chunked=False)


class TestStatusErrors:
    def test_a_proxys_html_error_page_is_a_retryable_server_error(self) -> None:
        page = whole(502, b"<html>Bad Gateway</html>", **{"x-request-id": "req-7"})
        with canned(page) as server:
            with pytest.raises(ModelError) as caught:
                call_once(server.base_url, max_retries=0)
        err = caught.value
        assert (err.status, err.error_type, err.retryable) == (502, "server_error", True)
        assert err.request_id == "req-7" and "Bad Gateway" in err.message

    def test_context_overflow_from_a_413(self) -> None:
        error = {"error": {"message": "Prompt is too long: 9000 tokens", "type": "invalid"}}
        with canned(whole(413, json.dumps(error).encode())) as server:
            with pytest.raises(ModelError) as caught:
                call_once(server.base_url)
        assert caught.value.error_type == "context_overflow" and not caught.value.retryable
        assert caught.value.message == "Prompt is too long: 9000 tokens"
        assert len(server.requests) == 1

    def test_retry_after_ms_is_read(self) -> None:
        with canned(whole(429, b"{}", **{"retry-after-ms": "1500"})) as server:
            with pytest.raises(ModelError) as caught:
                call_once(server.base_url, max_retries=0)
        assert caught.value.error_type == "rate_limit" and caught.value.retry_after == 1.5

    @pytest.mark.parametrize("body", [b"{not json", b'{"choices": []}', b"\xff\xfe"])
    def test_an_unreadable_whole_reply_is_a_bad_response(self, body: bytes) -> None:
        with canned(whole(200, body)) as server:
            with pytest.raises(ModelError) as caught:
                call_once(server.base_url, max_retries=0, stream=False)
        assert caught.value.error_type == "bad_response"


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_cert(tmp_path_factory.mktemp("tls"))


class TestTls:
    def test_https_streams_and_whole_replies_over_one_connection(
        self, cert: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
        with tls_sim(*cert) as port, relay(("127.0.0.1", port)) as peer:
            client = ModelClient(f"https://localhost:{peer.port}/v1", "k", retry_policy=QUICK)
            replies = [complete(client, stream=i % 2 == 0) for i in range(4)]
            client.close()
        assert all(r.content and r.finish_reason for r in replies)
        assert peer.accepted == 1  # one TCP connection, so one TLS handshake

    def test_an_untrusted_certificate_is_a_connection_error(self, cert: tuple[Path, Path]) -> None:
        with tls_sim(*cert) as port:
            client = ModelClient(f"https://localhost:{port}/v1", "k", max_retries=0)
            with pytest.raises(ModelError) as caught:
                complete(client)
        assert caught.value.error_type == "connection" and "CERTIFICATE" in caught.value.message
