"""The JSON tool protocol for models without native tool calling."""

from __future__ import annotations

import json

from services.model_sim.server import SimServerHandle
from services.worker.llm.client import ModelClient
from services.worker.llm.json_protocol import parse_tool_request, to_json_protocol
from tests.worker.llm.conftest import ScriptInstaller, sim_stats
from tests.worker.llm.test_client import TOOLS, USER


class TestParsing:
    def test_fenced_block_becomes_a_tool_call(self) -> None:
        text = 'Let me compute.\n```json\n{"tool": "python", "arguments": {"code": "1+1"}}\n```'
        parsed = parse_tool_request(text)
        assert parsed.content == "Let me compute."
        [call] = parsed.tool_calls
        assert call.name == "python" and json.loads(call.arguments) == {"code": "1+1"}
        assert parse_tool_request(text).tool_calls[0].id == call.id  # deterministic

    def test_list_of_requests_and_bare_json(self) -> None:
        block = '[{"tool": "glob", "arguments": {"pattern": "*.py"}}, {"name": "todo"}]'
        parsed = parse_tool_request(block)
        assert [c.name for c in parsed.tool_calls] == ["glob", "todo"]
        assert parsed.tool_calls[1].arguments == "{}"
        assert parsed.content is None

    def test_plain_answer_and_ordinary_json_are_left_alone(self) -> None:
        text = 'The config is:\n```json\n{"lr": 0.1}\n```\nDone.'
        parsed = parse_tool_request(text)
        assert parsed.tool_calls == [] and parsed.content == text and parsed.errors == []

    def test_malformed_tool_block_is_reported(self) -> None:
        parsed = parse_tool_request('```json\n{"tool": "python", "arguments": {"code": }\n```')
        assert parsed.tool_calls == []
        assert "not valid JSON" in parsed.errors[0]


def test_history_is_rewritten_for_a_model_without_tools() -> None:
    history = [
        {"role": "system", "content": "You are helpful."},
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "python", "arguments": '{"code": "1+1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ]
    out = to_json_protocol(history, TOOLS)
    assert "python: Run Python code" in out[0]["content"]
    assert out[0]["content"].startswith("You are helpful.")
    assert "tool_calls" not in out[2]
    assert parse_tool_request(out[2]["content"]).tool_calls[0].name == "python"
    assert out[3]["role"] == "user" and out[3]["content"].endswith("2")


def test_client_turns_a_text_tool_request_into_tool_calls(
    client: ModelClient, script: ScriptInstaller, sim: SimServerHandle
) -> None:
    reply = 'I will run it.\n```json\n{"tool": "python", "arguments": {"code": "print(2)"}}\n```'
    key = script({"replies": [{"content": reply}]})
    response = client.complete(
        model="m",
        messages=USER,
        tools=TOOLS,
        max_tokens=64,
        conversation_key=key,
        tool_protocol="json",
    )
    assert response.finish_reason == "tool_calls"
    assert response.content == "I will run it."
    assert [c.name for c in response.tool_calls] == ["python"]
    # The model got no native tools, only a system prompt describing them.
    seen = sim_stats(sim)["conversations"][key]
    assert seen["last_tools"] == [] and seen["last_messages"] == 2
