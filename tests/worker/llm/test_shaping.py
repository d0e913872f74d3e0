"""Requests shaped by the endpoint's Capabilities: the pure rules, and what reaches a
real server over HTTP (the simulator's request log, a recording server's bodies)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from services.model_sim.server import SimServerHandle
from services.worker.llm.capabilities import Capabilities
from services.worker.llm.client import ModelClient
from services.worker.llm.shaping import (
    CONTINUE_TURN,
    fold_system,
    merge_same_roles,
    shape_request,
)
from tests.worker.llm.conftest import ScriptInstaller
from tests.worker.llm.http_peers import Canned, canned

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
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}
# llama-cpp-python serving Gemma 3, as discovery would describe it.
GEMMA = Capabilities(
    structured_output="json_object",
    tool_mode="native",
    stream_tool_calls=False,
    system_role=False,
    alternation=True,
    server="llama-cpp-python",
)
AFTER_SUMMARY = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Summary of the conversation so far: ..."},
    {"role": "user", "content": "Now compute 2+2."},
]
TOOL_EXCHANGE: list[dict[str, Any]] = [
    {"role": "user", "content": "Compute."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "python", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "python", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "4"},
    {"role": "tool", "tool_call_id": "c2", "content": "5"},
]


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def alternates(messages: list[dict[str, Any]]) -> bool:
    pairs = zip(messages, messages[1:], strict=False)
    return all(a["role"] != b["role"] for a, b in pairs) and "tool" not in roles(messages)


class TestRules:
    def test_same_roles_are_merged_in_order(self) -> None:
        merged = merge_same_roles(AFTER_SUMMARY)
        assert roles(merged) == ["system", "user"]
        assert merged[1]["content"] == "Summary of the conversation so far: ...\n\nNow compute 2+2."

    def test_the_system_message_is_folded_into_the_first_user_turn(self) -> None:
        folded = fold_system(AFTER_SUMMARY)
        assert roles(folded) == ["user", "user"]
        assert folded[0]["content"].startswith("You are helpful.\n\nSummary")

    def test_tool_results_alternate_under_an_alternating_template(self) -> None:
        for mode in ("native", "json"):
            caps = Capabilities(alternation=True, tool_mode=mode)
            shaped = shape_request(
                messages=TOOL_EXCHANGE,
                tools=TOOLS,
                response_format=None,
                stream=True,
                capabilities=caps,
            )
            assert alternates(shaped.messages), (mode, shaped.messages)
            assert "Result of tool call c1:\n4" in shaped.messages[-1]["content"]
            assert "Result of tool call c2:\n5" in shaped.messages[-1]["content"]

    def test_a_conversation_resuming_with_the_assistant_starts_with_the_user(self) -> None:
        view = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]
        shaped = shape_request(
            messages=view,
            tools=None,
            response_format=None,
            stream=True,
            capabilities=Capabilities(alternation=True),
        )
        assert shaped.messages[1] == {"role": "user", "content": CONTINUE_TURN}

    def test_native_tools_carry_tool_choice_and_stream_only_where_they_can(self) -> None:
        for caps, streams in ((Capabilities(), True), (GEMMA, False)):
            shaped = shape_request(
                messages=TOOL_EXCHANGE[:1],
                tools=TOOLS,
                response_format=None,
                stream=True,
                capabilities=caps,
            )
            assert shaped.tool_choice == "auto" and shaped.native_tools == TOOLS
            assert shaped.stream is streams

    def test_the_json_tool_mode_sends_no_native_tools(self) -> None:
        shaped = shape_request(
            messages=TOOL_EXCHANGE[:1],
            tools=TOOLS,
            response_format=None,
            stream=True,
            capabilities=Capabilities(tool_mode="json"),
        )
        assert shaped.native_tools is None and shaped.tool_choice is None and shaped.json_tools
        assert "python" in shaped.messages[0]["content"] and shaped.stream

    def test_the_caller_messages_are_left_alone(self) -> None:
        before = json.dumps(AFTER_SUMMARY)
        shape_request(
            messages=AFTER_SUMMARY,
            tools=None,
            response_format=JSON_SCHEMA,
            stream=True,
            capabilities=Capabilities(structured_output="prompt", alternation=True),
        )
        assert json.dumps(AFTER_SUMMARY) == before


def sent_body(caps: Capabilities, **kwargs: Any) -> tuple[dict[str, Any], list[str]]:
    """What a recording server received for one call, and the tokens the caller saw."""
    whole = json.dumps({"choices": [{"message": {"content": '{"answer": "4"}'}}]}).encode()
    stream = b'data: {"choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}\n\n'
    tokens: list[str] = []
    with canned(Canned([stream if kwargs.get("stream", True) else whole])) as server:
        client = ModelClient(server.base_url, "k", timeout_s=5, capabilities=lambda: caps)
        client.complete(model="m", max_tokens=32, on_token=tokens.append, **kwargs)
        client.close()
    body: dict[str, Any] = json.loads(server.requests[0].body)
    return body, tokens


class TestOnTheWire:
    def test_roles_merged_and_folded_reach_the_server(
        self, sim: SimServerHandle, script: ScriptInstaller
    ) -> None:
        key = script({"replies": [{"content": "4"}]})
        client = ModelClient(sim.base_url, "k", timeout_s=5, capabilities=lambda: GEMMA)
        assert client.capabilities() is GEMMA
        reply = client.complete(
            model="m", messages=AFTER_SUMMARY, max_tokens=16, conversation_key=key
        )
        assert reply.content == "4"
        seen = httpx.get(f"{sim.url}/_sim/requests", params={"key": key}, timeout=5).json()
        [sent] = [item["messages"] for item in seen["items"]]
        assert roles(sent) == ["user"]
        assert sent[0]["content"] == (
            "You are helpful.\n\nSummary of the conversation so far: ...\n\nNow compute 2+2."
        )

    def test_tools_go_unstreamed_with_tool_choice_and_the_answer_reaches_watchers(
        self,
    ) -> None:
        whole = json.dumps({"choices": [{"message": {"content": "no tool needed"}}]}).encode()
        tokens: list[str] = []
        with canned(Canned([whole], chunked=False)) as server:
            client = ModelClient(server.base_url, "k", timeout_s=5, capabilities=lambda: GEMMA)
            reply = client.complete(
                model="m",
                messages=TOOL_EXCHANGE[:1],
                tools=TOOLS,
                max_tokens=32,
                on_token=tokens.append,
            )
            client.close()
        sent = json.loads(server.requests[0].body)
        assert sent["tool_choice"] == "auto" and sent["tools"] == TOOLS
        assert "stream" not in sent
        assert reply.content == "no tool needed" and tokens == ["no tool needed"]

    def test_structured_output_as_json_object_with_its_schema(self) -> None:
        body, _ = sent_body(GEMMA, messages=AFTER_SUMMARY, response_format=JSON_SCHEMA)
        assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}

    def test_structured_output_in_the_prompt(self) -> None:
        caps = Capabilities(structured_output="prompt")
        body, _ = sent_body(caps, messages=AFTER_SUMMARY, response_format=JSON_SCHEMA)
        assert "response_format" not in body
        last = body["messages"][-1]
        assert last["role"] == "user" and last["content"].startswith("Now compute 2+2.")
        assert "Answer with JSON only" in last["content"]
        assert json.dumps(SCHEMA) in last["content"]

    def test_json_schema_goes_as_given_where_it_is_accepted(self) -> None:
        body, _ = sent_body(Capabilities(), messages=AFTER_SUMMARY, response_format=JSON_SCHEMA)
        assert body["response_format"] == JSON_SCHEMA
        assert body["messages"] == AFTER_SUMMARY  # a permissive server gets the view as is
