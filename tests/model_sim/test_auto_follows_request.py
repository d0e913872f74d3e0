"""Auto mode follows the user's request, over real HTTP to the simulator.

It quotes only the user's words and tool results (never Leaflab's system prompt,
a survey stage's instructions or the JSON protocol's tool descriptions), calls
the offered tools the request implies in order, once each, then answers from
their results; every plain-text reply carries the simulator's label.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest

from services.model_sim.auto import sources
from services.model_sim.auto.tool_inputs import SIMULATED_LABEL
from services.worker.llm.json_protocol import (
    INSTRUCTIONS,
    parse_tool_request,
    to_json_protocol,
    tool_history_as_text,
)
from services.worker.survey import write
from services.worker.survey.schemas import section_schema
from services.worker.tools.code import PythonTool
from services.worker.tools.files.editing import WriteFileTool
from services.worker.tools.library_search import LibrarySearchTool
from services.worker.tools.todo import TodoTool
from tests.model_sim.prompt_text import ALL_PROMPTS, agent_system_prompt, leaks
from tests.model_sim.test_server import chat

TOOLS = [
    tool().openai_schema() for tool in (TodoTool, WriteFileTool, PythonTool, LibrarySearchTool)
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
SYSTEM = {"role": "system", "content": agent_system_prompt()}
README_ASK = "write a todo list and a notes file"
PASSAGE = "Event-triggered control samples the plant only when the error crosses a threshold."
MAX_ROUNDS = 6  # a plan is at most four calls; more rounds would be a loop


def _message(http: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    resp = chat(http, None, messages, **extra)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["choices"][0]["message"])


def _run_turn(
    http: httpx.Client, ask: str, result_for: Any, tools: list[dict[str, Any]] = TOOLS
) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """Play the agent: send, run each tool call (``result_for`` answers), until text."""
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": ask}]
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(MAX_ROUNDS):
        reply = _message(http, messages, tools=tools)
        if not reply.get("tool_calls"):
            return calls, str(reply["content"])
        (call,) = reply["tool_calls"]  # one tool round at a time
        name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"])
        calls.append((name, arguments))
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": result_for(name, arguments)},
        ]
    raise AssertionError(f"no answer after {MAX_ROUNDS} rounds: {calls}")


def _no_leak(output: str, allowed: str) -> None:
    assert leaks(output, ALL_PROMPTS, allowed=allowed) == [], output


class TestToolsTheRequestImplies:
    def test_the_readme_example_writes_a_todo_list_then_a_notes_file(
        self, http: httpx.Client
    ) -> None:
        def result(name: str, arguments: dict[str, Any]) -> str:
            return json.dumps({"ok": True, "path": arguments.get("path", "todo")})

        calls, answer = _run_turn(http, README_ASK, result)
        assert [name for name, _ in calls] == ["todo", "write_file"]
        for name, arguments in calls:
            jsonschema.validate(arguments, SCHEMAS[name])
            _no_leak(json.dumps(arguments), README_ASK)
        items = [item["content"] for item in calls[0][1]["items"]]
        assert "Write a todo list" in items and "Write a notes file" in items
        path, content = calls[1][1]["path"], calls[1][1]["content"]
        assert path.startswith("notes/") and path.endswith(".md")
        assert README_ASK in content and "Simulated" in content
        assert "todo and write_file results" in answer
        assert answer.endswith(SIMULATED_LABEL)
        _no_leak(answer, README_ASK)

    def test_search_plot_and_notes_run_in_order_and_the_answer_reports_them(
        self, http: httpx.Client
    ) -> None:
        ask = "Search the library for papers on event-triggered control, plot the rate, save notes."

        def result(name: str, arguments: dict[str, Any]) -> str:
            return PASSAGE if name == "library_search" else json.dumps({"ok": True})

        calls, answer = _run_turn(http, ask, result)
        assert [name for name, _ in calls] == ["library_search", "python", "write_file"]
        assert calls[0][1]["query"] == "event-triggered control"
        code = calls[1][1]["code"]
        compile(code, "<auto>", "exec")
        assert "savefig" in code and "matplotlib" in code
        assert PASSAGE.rstrip(".") in calls[2][1]["content"]  # the notes report the search
        assert PASSAGE.rstrip(".") in answer  # and so does the answer
        for name, arguments in calls:
            jsonschema.validate(arguments, SCHEMAS[name])
        _no_leak(answer + json.dumps(calls), ask + PASSAGE)

    def test_only_offered_tools_are_called(self, http: httpx.Client) -> None:
        only_files = [t for t in TOOLS if t["function"]["name"] == "write_file"]
        calls, _ = _run_turn(http, README_ASK, lambda *_: "ok", only_files)
        assert [name for name, _ in calls] == ["write_file"]
        calls, answer = _run_turn(http, README_ASK, lambda *_: "ok", [])
        assert calls == [] and answer.endswith(SIMULATED_LABEL)

    def test_a_tool_with_another_schema_still_gets_arguments_that_validate(
        self, http: httpx.Client
    ) -> None:
        strict = {
            "type": "object",
            "additionalProperties": False,
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                "content": {"type": "string", "maxLength": 30},
            },
        }
        tool = {"type": "function", "function": {"name": "write_file", "parameters": strict}}
        calls, _ = _run_turn(http, "save notes on robust control theory", lambda *_: "ok", [tool])
        ((name, arguments),) = calls
        jsonschema.validate(arguments, strict)  # the built path and content did not fit

    def test_a_question_that_implies_no_tool_is_answered_without_leaking(
        self, http: httpx.Client
    ) -> None:
        for ask in (
            "What limits the sampling rate in event-triggered control?",
            "Explain why robust control needs a model of the uncertainty.",
        ):
            calls, answer = _run_turn(http, ask, lambda *_: "ok")
            assert calls == []
            assert answer.endswith(SIMULATED_LABEL)
            _no_leak(answer, ask)

    def test_after_the_plan_it_answers_even_when_asked_to_use_a_tool_again(
        self, http: httpx.Client
    ) -> None:
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "python", "arguments": '{"code": "print(5)"}'},
        }
        messages: list[dict[str, Any]] = [
            SYSTEM,
            {"role": "user", "content": "Use python to add 2 and 3."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "5"},
        ]
        reply = _message(http, messages, tools=TOOLS)
        assert not reply.get("tool_calls")
        assert "python result" in reply["content"] and "- python: 5" in reply["content"]


class TestJsonProtocol:
    def test_tools_listed_in_the_prompt_are_asked_for_with_fenced_blocks(
        self, http: httpx.Client
    ) -> None:
        history: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": README_ASK}]
        names = []
        for _ in range(MAX_ROUNDS):
            reply = _message(http, to_json_protocol(history, TOOLS))
            parsed = parse_tool_request(reply["content"])
            if not parsed.tool_calls:
                break
            (call,) = parsed.tool_calls
            names.append(call.name)
            jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
            _no_leak(call.arguments, README_ASK)
            function = {"name": call.name, "arguments": call.arguments}
            wire = {"id": call.id, "type": "function", "function": function}
            history += [
                {"role": "assistant", "content": None, "tool_calls": [wire]},
                {"role": "tool", "tool_call_id": call.id, "content": '{"ok": true}'},
            ]
        assert names == ["todo", "write_file"]
        assert "todo and write_file results" in reply["content"]
        _no_leak(reply["content"], README_ASK)

    def test_the_simulator_reads_the_protocol_as_the_worker_writes_it(self) -> None:
        assert sources.PROTOCOL_HEADER in INSTRUCTIONS
        assert sources.PROTOCOL_LIST in INSTRUCTIONS
        as_text = tool_history_as_text([{"role": "tool", "tool_call_id": "x", "content": "r"}])
        assert sources.RESULT_HEADER.match(as_text[0]["content"])
        listed = sources.protocol_tools(to_json_protocol([SYSTEM], TOOLS))
        assert [t["function"]["name"] for t in listed] == list(SCHEMAS)
        assert [t["function"]["parameters"] for t in listed] == list(SCHEMAS.values())


class TestSurveySections:
    @pytest.mark.parametrize("seed_word", ["alpha", "beta", "gamma"])
    def test_a_section_is_built_from_the_notes_not_the_stage_prompt(
        self, http: httpx.Client, seed_word: str
    ) -> None:
        notes = (
            f"Section: Triggering rules ({seed_word})\nNotes:\n"
            f"[@lemmon2010] Event-triggered control\n  problem: {PASSAGE}\n"
            "  method: A Lyapunov function bounds the inter-event time from below.\n"
            "[@heemels2012] Periodic event-triggered control\n"
            "  results: Checking the trigger periodically avoids Zeno behaviour."
        )
        schema = section_schema(["lemmon2010", "heemels2012"])
        fmt = {"type": "json_schema", "json_schema": {"name": "section", "schema": schema}}
        messages = [{"role": "system", "content": write.SYSTEM}, {"role": "user", "content": notes}]
        reply = _message(http, messages, response_format=fmt)
        section = json.loads(reply["content"])
        jsonschema.validate(section, schema)
        text = " ".join(p["text"] for p in section["paragraphs"])
        assert text.strip()
        _no_leak(text, notes)
