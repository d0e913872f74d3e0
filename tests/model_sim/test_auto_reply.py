"""Auto mode's choice of reply: tool call, JSON, or text; and when a request is refused."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from services.model_sim.auto import AutoError, auto_reply

ASK = [{"role": "user", "content": "Survey event-triggered control for networked systems."}]
PYTHON = {
    "type": "function",
    "function": {
        "name": "python",
        "parameters": {
            "type": "object",
            "required": ["code"],
            "properties": {"code": {"type": "string"}},
        },
    },
}
SEARCH_PARAMS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query", "limit", "years"],
    "properties": {
        "query": {"type": "string", "minLength": 3, "maxLength": 60},
        "limit": {"type": "integer", "minimum": 1, "maximum": 25},
        "years": {"type": "array", "items": {"type": "integer", "minimum": 2019, "maximum": 2026}},
        "open_access": {"type": "boolean"},
    },
}
SEARCH = {"type": "function", "function": {"name": "paper_search", "parameters": SEARCH_PARAMS}}


def reply(messages: list[dict[str, Any]] = ASK, **body: Any) -> Any:
    return auto_reply({"model": "leaflab-sim", "messages": messages, **body})


class TestToolCalls:
    def test_a_named_tool_choice_is_called_with_schema_valid_arguments(self) -> None:
        choice = {"type": "function", "function": {"name": "paper_search"}}
        entry = reply(tools=[PYTHON, SEARCH], tool_choice=choice)
        (call,) = entry.tool_calls
        assert call.name == "paper_search"
        jsonschema.validate(json.loads(call.arguments_json()), SEARCH_PARAMS)

    def test_required_calls_the_tool_the_user_names(self) -> None:
        asked = [{"role": "user", "content": "Please use paper_search for recent work."}]
        entry = reply(asked, tools=[PYTHON, SEARCH], tool_choice="required")
        assert entry.tool_calls[0].name == "paper_search"

    def test_required_without_a_named_tool_still_calls_one(self) -> None:
        entry = reply(tools=[PYTHON, SEARCH], tool_choice="required")
        assert entry.tool_calls[0].name in {"python", "paper_search"}

    def test_auto_answers_text_unless_the_user_asks_for_a_tool(self) -> None:
        assert reply(tools=[PYTHON]).tool_calls is None
        asked = [{"role": "user", "content": "Use python to add 2 and 3."}]
        call = reply(asked, tools=[PYTHON]).tool_calls[0]
        code = json.loads(call.arguments_json())["code"]
        assert code.startswith("print(")
        compile(code, "<auto>", "exec")  # code arguments are code that runs

    def test_after_a_tool_result_the_turn_ends_with_text(self) -> None:
        asked = [{"role": "user", "content": "Use python to add 2 and 3."}]
        call = {
            "id": "call_0_0",
            "type": "function",
            "function": {"name": "python", "arguments": '{"code": "print(5)"}'},
        }
        history: list[dict[str, Any]] = [
            *asked,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0_0", "content": "5"},
        ]
        entry = reply(history, tools=[PYTHON])
        assert entry.tool_calls is None
        assert "python result" in entry.content

    def test_none_never_calls(self) -> None:
        asked = [{"role": "user", "content": "Use python to add 2 and 3."}]
        assert reply(asked, tools=[PYTHON], tool_choice="none").tool_calls is None


class TestTextAndJson:
    def test_plain_text_mentions_the_topic(self) -> None:
        text = reply().content
        assert "event-triggered control for networked systems" in text
        assert not text.lstrip().startswith(("{", "["))  # never read as a JSON tool request

    def test_json_object_is_an_object(self) -> None:
        value = json.loads(reply(response_format={"type": "json_object"}).content)
        assert isinstance(value, dict) and value

    def test_json_schema_reply_validates(self) -> None:
        fmt = {
            "type": "json_schema",
            "json_schema": {"name": "q", "strict": True, "schema": SEARCH_PARAMS},
        }
        jsonschema.validate(json.loads(reply(response_format=fmt).content), SEARCH_PARAMS)

    def test_the_same_request_gets_the_same_reply_and_another_another(self) -> None:
        fmt = {"type": "json_schema", "json_schema": {"schema": SEARCH_PARAMS}}
        same = [reply(response_format=fmt).content for _ in range(3)]
        assert len(set(same)) == 1
        other = [{"role": "user", "content": "Survey model predictive control in robotics."}]
        assert reply(other, response_format=fmt).content != same[0]


class TestRefused:
    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"response_format": "json"}, "response_format must be an object"),
            ({"response_format": {"type": "yaml"}}, "response_format.type"),
            ({"response_format": {"type": "json_schema"}}, "json_schema must be an object"),
            ({"tool_choice": "required"}, "no tools were offered"),
            (
                {
                    "tools": [PYTHON],
                    "tool_choice": {"type": "function", "function": {"name": "sh"}},
                },
                "not among the tools",
            ),
            ({"tools": [PYTHON], "tool_choice": "sometimes"}, "tool_choice must be"),
        ],
    )
    def test_bad_requests_say_why(self, body: dict[str, Any], message: str) -> None:
        with pytest.raises(AutoError, match=message):
            reply(**body)
