"""The simulator over real HTTP: OpenAI wire format, reply selection, faults, validation."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from services.model_sim.state import EXHAUSTED_REPLY

USER = [{"role": "user", "content": "What is 1+1?"}]


def put_script(http: httpx.Client, key: str, script: dict[str, Any]) -> None:
    http.put(f"/_sim/scripts/{key}", json=script).raise_for_status()


def chat(http: httpx.Client, key: str | None, messages: list[dict[str, Any]], **extra: Any) -> Any:
    headers = {"X-Leaflab-Conversation": key} if key else {}
    body = {"model": "leaflab-sim", "messages": messages, **extra}
    return http.post("/v1/chat/completions", json=body, headers=headers)


def sse_chunks(text: str) -> list[Any]:
    events = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


TOOL_SCRIPT = {
    "replies": [
        {"tool_calls": [{"name": "python", "arguments": {"code": "print(1+1)  # two"}}]},
        {"content": "Done: the answer is 2"},
    ]
}


class TestWireFormat:
    def test_whole_reply_has_openai_shape(self, http: httpx.Client) -> None:
        put_script(http, "c1", {"replies": [{"content": "Hi there"}]})
        resp = chat(http, "c1", USER)
        assert resp.status_code == 200
        assert resp.headers["x-request-id"].startswith("req-sim-")
        body = resp.json()
        assert body["id"].startswith("chatcmpl-sim-")
        assert body["object"] == "chat.completion"
        choice = body["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "Hi there"}
        assert choice["finish_reason"] == "stop"
        assert body["usage"]["prompt_tokens"] == 4  # 12 chars / 3
        assert body["usage"]["completion_tokens"] == 3
        assert body["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}

    def test_stream_splits_tool_call_and_ends_with_usage(self, http: httpx.Client) -> None:
        put_script(http, "c2", TOOL_SCRIPT)
        resp = chat(http, "c2", USER, stream=True, stream_options={"include_usage": True})
        assert resp.headers["content-type"].startswith("text/event-stream")
        chunks = sse_chunks(resp.text)
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[1:-2]]
        assert calls[0]["id"] == "call_0_0"
        assert calls[0]["function"]["name"] == "python"
        pieces = [c["function"]["arguments"] for c in calls]
        assert len([p for p in pieces if p]) > 1  # arguments arrive in several deltas
        assert json.loads("".join(pieces)) == {"code": "print(1+1)  # two"}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"]["completion_tokens"] > 0

    def test_stream_content_in_several_deltas_without_usage(self, http: httpx.Client) -> None:
        put_script(http, "c3", {"replies": [{"content": "one two three four"}]})
        chunks = sse_chunks(chat(http, "c3", USER, stream=True).text)
        deltas = [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]]
        assert deltas == ["one", " two", " three", " four"]
        assert all("usage" not in c for c in chunks)

    def test_string_arguments_are_passed_verbatim(self, http: httpx.Client) -> None:
        script = {"replies": [{"tool_calls": [{"name": "python", "arguments": '{"code": '}]}]}
        put_script(http, "c4", script)
        message = chat(http, "c4", USER).json()["choices"][0]["message"]
        assert message["tool_calls"][0]["function"]["arguments"] == '{"code": '

    def test_models_and_health(self, http: httpx.Client) -> None:
        assert http.get("/healthz").json()["status"] == "ok"
        assert http.get("/v1/models").json()["data"][0]["id"] == "leaflab-sim"


class TestReplySelection:
    def test_without_script_an_auto_reply_about_the_question(self, http: httpx.Client) -> None:
        body = chat(http, None, USER).json()
        assert "1+1" in body["choices"][0]["message"]["content"]

    def test_replies_follow_the_assistant_turns(self, http: httpx.Client) -> None:
        put_script(http, "r1", TOOL_SCRIPT)
        first = chat(http, "r1", USER).json()["choices"][0]["message"]
        history = [*USER, first, {"role": "tool", "tool_call_id": "call_0_0", "content": "2"}]
        second = chat(http, "r1", history).json()["choices"][0]["message"]
        assert second["content"] == "Done: the answer is 2"
        # Past the end: the last plain reply again.
        third = chat(http, "r1", [*history, second, {"role": "user", "content": "and?"}])
        assert third.json()["choices"][0]["message"]["content"] == "Done: the answer is 2"

    def test_script_ending_in_a_tool_call_ends_with_fixed_text(self, http: httpx.Client) -> None:
        put_script(http, "r2", {"replies": TOOL_SCRIPT["replies"][:1]})
        first = chat(http, "r2", USER).json()["choices"][0]["message"]
        later = chat(http, "r2", [*USER, first, {"role": "tool", "content": "2"}]).json()
        assert later["choices"][0]["message"]["content"] == EXHAUSTED_REPLY

    def test_same_request_twice_gets_the_same_reply(self, http: httpx.Client) -> None:
        put_script(http, "r3", TOOL_SCRIPT)
        one = chat(http, "r3", USER).json()["choices"][0]["message"]
        two = chat(http, "r3", USER).json()["choices"][0]["message"]
        assert one == two
        assert one["tool_calls"][0]["id"] == "call_0_0"

    def test_scripts_are_per_conversation(self, http: httpx.Client) -> None:
        put_script(http, "a", {"replies": [{"content": "from a"}]})
        put_script(http, "b", {"replies": [{"content": "from b"}]})
        assert chat(http, "a", USER).json()["choices"][0]["message"]["content"] == "from a"
        assert chat(http, "b", USER).json()["choices"][0]["message"]["content"] == "from b"
        assert http.delete("/_sim/scripts/a").status_code == 204
        assert http.delete("/_sim/scripts/a").status_code == 404
        assert "auto-generated" in chat(http, "a", USER).json()["choices"][0]["message"]["content"]

    def test_cached_tokens_cover_the_prefix_seen_before(self, http: httpx.Client) -> None:
        put_script(http, "p", {"replies": [{"content": "first"}, {"content": "second"}]})
        first = chat(http, "p", USER).json()
        assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        history = [*USER, first["choices"][0]["message"], {"role": "user", "content": "more"}]
        usage = chat(http, "p", history).json()["usage"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == 4  # "What is 1+1?"
        assert usage["prompt_tokens"] == 7  # 12 + 5 + 4 chars


class TestFaults:
    def test_errors_come_before_the_reply_of_their_slot(self, http: httpx.Client) -> None:
        script = {
            "replies": [
                {"error": 429},
                {"error": 503, "retry_after": 1, "message": "warming up"},
                {"content": "finally"},
            ]
        }
        put_script(http, "f1", script)
        first = chat(http, "f1", USER)
        assert first.status_code == 429
        assert first.json()["error"]["type"] == "rate_limit_error"
        second = chat(http, "f1", USER)
        assert second.status_code == 503
        assert second.headers["retry-after"] == "1"
        assert second.json()["error"]["message"] == "warming up"
        assert chat(http, "f1", USER).json()["choices"][0]["message"]["content"] == "finally"
        stats = http.get("/_sim/stats").json()
        assert stats["conversations"]["f1"]["attempts"] == {"0": 3}
        assert stats["errors_injected"] == 2

    def test_disconnect_drops_the_connection_then_replies(self, http: httpx.Client) -> None:
        put_script(http, "f2", {"replies": [{"disconnect": True}, {"content": "after drop"}]})
        with pytest.raises(httpx.RemoteProtocolError):
            chat(http, "f2", USER)
        assert chat(http, "f2", USER).json()["choices"][0]["message"]["content"] == "after drop"

    def test_delay_override_and_bare_delay(self, http: httpx.Client) -> None:
        script = {"latency_ms": 0, "replies": [{"delay_ms": 300}, {"content": "slow"}]}
        put_script(http, "f3", script)
        started = time.monotonic()
        assert chat(http, "f3", USER).json()["choices"][0]["message"]["content"] == "slow"
        assert time.monotonic() - started >= 0.3
        chat(http, "f3", USER)  # the delay was used up by the first attempt


class TestValidation:
    @pytest.mark.parametrize(
        ("script", "complaint"),
        [
            ({"replies": [{"error": 999}]}, "error must be one of"),
            ({"replies": [{"content": "x", "error": 429}]}, "either a reply"),
            ({"replies": [{}]}, "needs content"),
            ({"replies": [{"tool_calls": [{"arguments": {}}]}]}, "name"),
            ({"latency_ms": -1}, "latency_ms"),
            ({"replies": [{"conent": "typo"}]}, "conent"),
        ],
    )
    def test_bad_script_is_refused_clearly(
        self, http: httpx.Client, script: dict[str, Any], complaint: str
    ) -> None:
        put_script(http, "v", {"replies": [{"content": "kept"}]})
        resp = http.put("/_sim/scripts/v", json=script)
        assert resp.status_code == 400
        assert complaint in resp.json()["error"]["message"]
        assert chat(http, "v", USER).json()["choices"][0]["message"]["content"] == "kept"

    @pytest.mark.parametrize(
        "body",
        [
            b"{not json",
            b'{"model": "m"}',
            b'{"model": "m", "messages": []}',
            b'{"model": "m", "messages": [{"role": "robot", "content": "x"}]}',
            b'{"model": "m", "messages": "hello"}',
        ],
    )
    def test_bad_request_is_400_in_openai_format(self, http: httpx.Client, body: bytes) -> None:
        resp = http.post(
            "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
        )
        assert resp.status_code == 400
        error = resp.json()["error"]
        assert error["type"] == "invalid_request_error" and error["message"]
        assert http.get("/healthz").status_code == 200
