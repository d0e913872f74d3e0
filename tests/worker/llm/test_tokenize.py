"""The reservation's prompt count from the server's tokenizer: real HTTP on loopback.

A small tokenizer server speaks llama.cpp's ``/tokenize`` (one token per word) or
llama-cpp-python's ``/extras/tokenize``; what is asserted is the count the budget
would reserve, how many requests reached the server, and the fallbacks.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from services.worker.llm.capabilities import Capabilities
from services.worker.llm.tokenize import ServerTokenizer, tokenizer_for
from services.worker.llm.types import estimate_tokens


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.status = 200
        self.delay_s = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                time.sleep(server.delay_s)
                text = body.get("content") or body.get("input") or ""
                payload = json.dumps({"tokens": list(range(len(text.split())))}).encode()
                self.send_response(server.status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.http.shutdown()


TEXT = "one two three four five six seven eight nine ten " * 20  # 200 words, 980 chars


def test_the_server_counts_and_each_text_is_asked_once(server: _Server) -> None:
    caps = Capabilities(tokenize_path="/tokenize", server="llama.cpp")
    tokenizer = tokenizer_for(server.base_url, caps)
    assert (
        tokenizer is not None and tokenizer.url == server.base_url.removesuffix("/v1") + "/tokenize"
    )
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": TEXT}]
    first = tokenizer.prompt_tokens(messages, None)
    assert first == 2 + 200 + 2 * 4  # the server's counts, not 980 chars / 3
    assert estimate_tokens(TEXT) == 327
    asked = len(server.requests)
    assert asked == 2 and server.requests[0] == (
        "/tokenize",
        {"content": "be brief", "prompt": "be brief"},
    )
    # The next round repeats the history: only the new message is asked.
    again = tokenizer.prompt_tokens([*messages, {"role": "user", "content": "and more"}], None)
    assert again == first + 2 + 4 and len(server.requests) == asked + 1


def test_llama_cpp_python_reads_input_at_its_extras_route(server: _Server) -> None:
    caps = Capabilities(tokenize_path="/extras/tokenize", server="llama-cpp-python")
    tokenizer = tokenizer_for(server.base_url, caps)
    assert tokenizer is not None and tokenizer.count("a b c") == 3
    assert server.requests == [("/extras/tokenize", {"input": "a b c"})]


def test_no_tokenizer_route_means_no_request() -> None:
    assert tokenizer_for("http://127.0.0.1:9/v1", Capabilities()) is None


def test_a_failing_tokenizer_falls_back_and_is_left_alone_for_a_while(server: _Server) -> None:
    server.status = 500
    tokenizer = ServerTokenizer(server.base_url.removesuffix("/v1") + "/tokenize")
    assert tokenizer.count(TEXT) == estimate_tokens(TEXT)
    assert tokenizer.count(TEXT + " x") == estimate_tokens(TEXT + " x")
    assert len(server.requests) == 1  # backed off after the failure


def test_a_slow_tokenizer_is_bounded_by_its_timeout(server: _Server) -> None:
    server.delay_s = 1.0
    tokenizer = ServerTokenizer(server.base_url.removesuffix("/v1") + "/tokenize", timeout_s=0.2)
    started = time.monotonic()
    assert tokenizer.count(TEXT) == estimate_tokens(TEXT)
    assert time.monotonic() - started < 0.9
