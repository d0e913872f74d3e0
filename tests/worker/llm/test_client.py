"""ModelClient against the simulator over real HTTP: replies, streaming, usage, retries."""

from __future__ import annotations

import json
import time

import pytest

from services.model_sim.server import SimServerHandle, free_port
from services.worker.llm.backoff import RetryPolicy
from services.worker.llm.client import ModelClient, client_from_settings
from services.worker.llm.errors import ModelError
from services.worker.llm.settings import LlmSettings
from tests.worker.llm.conftest import ScriptInstaller, sim_stats
from tests.worker.llm.http_peers import Canned, canned

USER = [{"role": "user", "content": "Compute 1+1 please."}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "python",
            "description": "Run Python code",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
        },
    }
]
TOOL_THEN_ANSWER = {
    "replies": [
        {"tool_calls": [{"name": "python", "arguments": {"code": "print(1 + 1)"}}]},
        {"content": "Done: the result is 2, as computed."},
    ]
}


class TestReplies:
    @pytest.mark.parametrize("stream", [True, False])
    def test_tool_call_then_answer(
        self, client: ModelClient, script: ScriptInstaller, stream: bool
    ) -> None:
        key = script(TOOL_THEN_ANSWER)
        first = client.complete(
            model="leaflab-sim",
            messages=USER,
            tools=TOOLS,
            max_tokens=256,
            conversation_key=key,
            stream=stream,
        )
        assert first.finish_reason == "tool_calls"
        assert [(c.id, c.name) for c in first.tool_calls] == [("call_0_0", "python")]
        assert json.loads(first.tool_calls[0].arguments) == {"code": "print(1 + 1)"}
        assert first.request_id and first.request_id.startswith("req-sim-")
        assert first.usage.input_tokens == 7 and first.usage.cached_tokens == 0
        history = [
            *USER,
            {
                "role": "assistant",
                "content": first.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in first.tool_calls
                ],
            },
            {"role": "tool", "tool_call_id": "call_0_0", "content": "2"},
        ]
        second = client.complete(
            model="leaflab-sim",
            messages=history,
            tools=TOOLS,
            max_tokens=256,
            conversation_key=key,
            stream=stream,
        )
        assert second.content == "Done: the result is 2, as computed."
        assert second.finish_reason == "stop"
        assert second.usage.cached_tokens == 7  # the first user message, seen before
        assert second.usage.output_tokens == 12
        assert second.attempts == 1

    def test_messages_and_tools_reach_the_server(
        self, client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
    ) -> None:
        key = script({"replies": [{"content": "seen"}]})
        history = [{"role": "system", "content": "Be brief."}, *USER]
        client.complete(
            model="m", messages=history, tools=TOOLS, max_tokens=16, conversation_key=key
        )
        seen = sim_stats(sim)["conversations"][key]
        assert seen["last_messages"] == 2 and seen["last_tools"] == ["python"]

    def test_tokens_reach_the_callback_in_order(
        self, client: ModelClient, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"content": "alpha beta gamma delta"}]})
        tokens: list[str] = []
        reply = client.complete(
            model="m", messages=USER, max_tokens=64, conversation_key=key, on_token=tokens.append
        )
        assert tokens == ["alpha", " beta", " gamma", " delta"]
        assert "".join(tokens) == reply.content

    def test_replaying_a_request_gets_the_same_reply(
        self, client: ModelClient, script: ScriptInstaller
    ) -> None:
        key = script(TOOL_THEN_ANSWER)
        one = client.complete(model="m", messages=USER, max_tokens=64, conversation_key=key)
        two = client.complete(model="m", messages=USER, max_tokens=64, conversation_key=key)
        assert one.tool_calls == two.tool_calls


class TestRetries:
    def test_rate_limit_then_success(
        self, client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
    ) -> None:
        key = script({"replies": [{"error": 429}, {"content": "ok"}]})
        reply = client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        assert reply.content == "ok" and reply.attempts == 2
        assert sim_stats(sim)["conversations"][key]["attempts"] == {"0": 2}

    def test_retry_after_is_honoured(self, client: ModelClient, script: ScriptInstaller) -> None:
        key = script({"replies": [{"error": 503, "retry_after": 1}, {"content": "back"}]})
        started = time.monotonic()
        reply = client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        assert reply.content == "back"
        assert time.monotonic() - started >= 1.0  # not the 10 ms backoff

    def test_bad_request_is_not_retried(
        self, client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
    ) -> None:
        key = script({"replies": [{"error": 400, "message": "bad temperature"}, {"content": "x"}]})
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        err = caught.value
        assert (err.status, err.retryable, err.attempts) == (400, False, 1)
        assert err.error_type == "bad_request" and err.message == "bad temperature"
        assert err.request_id and err.request_id.startswith("req-sim-")
        assert sim_stats(sim)["conversations"][key]["requests"] == 1

    @pytest.mark.parametrize(
        ("entry", "error_type"),
        [
            ({"error": 401}, "auth"),
            (
                {"error": 400, "message": "maximum context length is 8192 tokens"},
                "context_overflow",
            ),
        ],
    )
    def test_request_errors_are_typed(
        self,
        client: ModelClient,
        script: ScriptInstaller,
        entry: dict[str, object],
        error_type: str,
    ) -> None:
        key = script({"replies": [entry, {"content": "never"}]})
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        assert caught.value.error_type == error_type and not caught.value.retryable

    def test_disconnect_mid_stream_is_retried(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"disconnect": True}, {"content": "whole reply here"}]})
        retries: list[ModelError] = []
        client = ModelClient(
            sim.base_url,
            "k",
            retry_policy=RetryPolicy(base_delay_s=0.01),
            on_retry=lambda err, wait: retries.append(err),
        )
        tokens: list[str] = []
        reply = client.complete(
            model="m", messages=USER, max_tokens=16, conversation_key=key, on_token=tokens.append
        )
        assert reply.content == "whole reply here" and reply.attempts == 2
        assert [e.error_type for e in retries] == ["disconnect"]
        assert tokens[0] == "whole"  # the dropped attempt's partial text came first
        assert "".join(tokens).endswith("whole reply here")

    def test_disconnect_of_a_whole_reply_is_retried(
        self, client: ModelClient, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"disconnect": True}, {"content": "intact"}]})
        reply = client.complete(
            model="m", messages=USER, max_tokens=16, conversation_key=key, stream=False
        )
        assert reply.content == "intact" and reply.attempts == 2

    def test_timeout_is_retried(self, sim: SimServerHandle, script: ScriptInstaller) -> None:
        key = script({"replies": [{"delay_ms": 2000}, {"content": "quick now"}]})
        policy = RetryPolicy(max_retries=1, base_delay_s=0.01)
        client = ModelClient(sim.base_url, "k", timeout_s=0.5, retry_policy=policy)
        reply = client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        assert reply.content == "quick now" and reply.attempts == 2

    def test_persistent_failure_gives_up_after_the_retries(
        self, client: ModelClient, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"error": 500}] * 5 + [{"content": "too late"}]})
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=16, conversation_key=key)
        assert caught.value.retryable and caught.value.attempts == 3

    def test_unreachable_endpoint_is_a_retryable_connection_error(self) -> None:
        policy = RetryPolicy(max_retries=1, base_delay_s=0.01)
        client = ModelClient(f"http://127.0.0.1:{free_port()}/v1", "k", retry_policy=policy)
        with pytest.raises(ModelError) as caught:
            client.complete(model="m", messages=USER, max_tokens=16)
        assert caught.value.error_type == "connection" and caught.value.retryable
        assert caught.value.attempts == 2


def test_client_from_settings_uses_the_configured_endpoint(
    sim: SimServerHandle, script: ScriptInstaller, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEAFLAB_LLM_BASE_URL", sim.base_url)
    monkeypatch.setenv("LEAFLAB_LLM_MAX_RETRIES", "4")
    client = client_from_settings(LlmSettings())
    assert client.policy.max_retries == 4
    key = script({"replies": [{"content": "configured"}]})
    reply = client.complete(model="m", messages=USER, max_tokens=8, conversation_key=key)
    assert reply.content == "configured"


COMPLETION = {
    "id": "chatcmpl-9",
    "model": "served-model",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"type": "function", "function": {"name": "python", "arguments": "{}"}},
                    {"type": "function", "function": None},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}


class TestWire:
    """What goes over the wire, seen by a recording server."""

    def test_a_streamed_request(self) -> None:
        stream = (
            b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
        )
        schema = {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}}
        with canned(Canned([stream])) as server:
            client = ModelClient(server.base_url, "sk-secret", timeout_s=5)
            client.complete(
                model="m",
                messages=USER,
                tools=TOOLS,
                max_tokens=32,
                conversation_key="conv-1",
                response_format=schema,
            )
            client.close()
        [seen] = server.requests
        assert seen.target == "/v1/chat/completions"
        assert seen.headers["authorization"] == "Bearer sk-secret"
        assert seen.headers["x-leaflab-conversation"] == "conv-1"
        assert seen.headers["content-type"] == "application/json"
        assert json.loads(seen.body) == {
            "model": "m",
            "messages": USER,
            "max_tokens": 32,
            "tools": TOOLS,
            "tool_choice": "auto",  # llama-cpp-python ignores tools without it
            "response_format": schema,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    def test_a_whole_request_and_its_reply(self) -> None:
        body = json.dumps(COMPLETION).encode()
        with canned(Canned([body], headers={"x-request-id": "req-1"}, chunked=False)) as server:
            client = ModelClient(server.base_url, "k", timeout_s=5)
            reply = client.complete(
                model="m", messages=USER, tools=TOOLS, max_tokens=8, stream=False
            )
            client.close()
        sent = json.loads(server.requests[0].body)
        assert "stream" not in sent and "stream_options" not in sent
        assert sent["tools"] == TOOLS and sent["messages"] == USER  # schemas spliced in whole
        assert "x-leaflab-conversation" not in server.requests[0].headers
        assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
            ("call_0", "python", "{}")
        ]
        assert (reply.model, reply.response_id, reply.request_id) == (
            "served-model",
            "chatcmpl-9",
            "req-1",
        )
        assert reply.usage.estimated  # the server reported none

    def test_the_json_tool_protocol_sends_no_native_tools(self) -> None:
        body = json.dumps({"choices": [{"message": {"content": "plain"}}]}).encode()
        with canned(Canned([body], chunked=False)) as server:
            client = ModelClient(server.base_url, "k", timeout_s=5)
            client.complete(
                model="m",
                messages=USER,
                tools=TOOLS,
                max_tokens=8,
                stream=False,
                tool_protocol="json",
            )
            client.close()
        sent = json.loads(server.requests[0].body)
        assert "tools" not in sent and sent["messages"][0]["role"] == "system"
