"""Auto mode over real HTTP: schema-valid JSON, streamed tool calls, the request log, precedence."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

import httpx
import jsonschema

from services.cli.up.commands import model_sim_argv
from services.model_sim.script import parse_script
from services.model_sim.server import free_port, serve_in_thread
from services.model_sim.state import estimate_tokens
from tests.model_sim.test_server import chat, put_script, sse_chunks

CHUNK = "5e1c0d2a-3b4f-4a6e-8c7d-9e0f1a2b3c4d"
DOC = "6f2d1e3b-4c5a-4b7f-9d8e-0f1a2b3c4d5e"
ASK = [
    {"role": "system", "content": "Answer with the outline as JSON."},
    {
        "role": "user",
        "content": (
            "Outline a survey of event-triggered control. Sampling happens only when needed.\n"
            f'Source: {{"document_id": "{DOC}", "chunk_id": "{CHUNK}", "page": 3}} [@lemmon2010]'
        ),
    },
]
OUTLINE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "sections"],
    "properties": {
        "title": {"type": "string", "maxLength": 80},
        "sections": {
            "type": "array",
            "minItems": 2,
            "maxItems": 5,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["heading", "cites", "chunk_id"],
                "properties": {
                    "heading": {"type": "string"},
                    "cites": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "chunk_id": {"type": "string"},
                },
            },
        },
    },
}
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "outline", "schema": OUTLINE}}
TOOL = {
    "type": "function",
    "function": {
        "name": "library_search",
        "parameters": {
            "type": "object",
            "required": ["query", "document_id"],
            "properties": {"query": {"type": "string"}, "document_id": {"type": "string"}},
        },
    },
}


def _text_of(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) for m in messages)


class TestAutoOverHttp:
    def test_json_schema_reply_validates_and_draws_on_the_messages(
        self, http: httpx.Client
    ) -> None:
        resp = chat(http, "auto-outline", ASK, response_format=SCHEMA_FORMAT)
        assert resp.status_code == 200
        body = resp.json()
        content = body["choices"][0]["message"]["content"]
        outline = json.loads(content)
        jsonschema.validate(outline, OUTLINE)
        assert {s["chunk_id"] for s in outline["sections"]} == {CHUNK}
        assert {c for s in outline["sections"] for c in s["cites"]} == {"lemmon2010"}
        assert body["choices"][0]["finish_reason"] == "stop"
        assert body["usage"]["prompt_tokens"] == estimate_tokens(_text_of(ASK))
        assert body["usage"]["completion_tokens"] == estimate_tokens(len(content))
        # The survey tests count model calls from the request log: auto replies are logged.
        items = http.get("/_sim/requests", params={"key": "auto-outline"}).json()["items"]
        assert [i["messages"] for i in items] == [ASK]
        assert http.get("/_sim/stats").json()["auto_replies"] == 1

    def test_the_same_request_gets_the_same_reply(self, http: httpx.Client) -> None:
        replies = [
            chat(http, "auto-same", ASK, response_format=SCHEMA_FORMAT).json()["choices"][0][
                "message"
            ]
            for _ in range(2)
        ]
        assert replies[0] == replies[1]

    def test_a_required_tool_call_streams_with_usage(self, http: httpx.Client) -> None:
        resp = chat(
            http,
            "auto-tool",
            ASK,
            tools=[TOOL],
            tool_choice="required",
            stream=True,
            stream_options={"include_usage": True},
        )
        assert resp.status_code == 200
        chunks = sse_chunks(resp.text)
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
        assert calls[0]["id"] == "call_0_0" and calls[0]["function"]["name"] == "library_search"
        arguments = json.loads("".join(c["function"]["arguments"] for c in calls))
        assert arguments["document_id"] == DOC
        assert len(calls) > 2  # arguments arrive in pieces
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1]
        assert finish == "tool_calls"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] > 0

    def test_text_streams_in_word_deltas(self, http: httpx.Client) -> None:
        resp = chat(http, "auto-text", ASK[1:], stream=True)
        pieces = [c["choices"][0]["delta"].get("content") for c in sse_chunks(resp.text)]
        text = "".join(p for p in pieces if p)
        assert "event-triggered control" in text
        assert len([p for p in pieces if p]) > 5

    def test_a_bad_response_format_is_a_400_with_the_reason(self, http: httpx.Client) -> None:
        resp = chat(http, "auto-bad", ASK, response_format={"type": "json_schema"})
        assert resp.status_code == 400
        assert "json_schema must be an object" in resp.json()["error"]["message"]
        missing = {"type": "json_schema", "json_schema": {"schema": {"$ref": "#/$defs/Nope"}}}
        resp = chat(http, "auto-bad", ASK, response_format=missing)
        assert resp.status_code == 400
        assert "points to nothing" in resp.json()["error"]["message"]

    def test_a_conversation_script_wins_over_auto_mode(self, http: httpx.Client) -> None:
        put_script(http, "auto-scripted", {"replies": [{"content": "scripted"}]})
        resp = chat(http, "auto-scripted", ASK, response_format=SCHEMA_FORMAT)
        assert resp.json()["choices"][0]["message"]["content"] == "scripted"
        http.delete("/_sim/scripts/auto-scripted")
        resp = chat(http, "auto-scripted", ASK, response_format=SCHEMA_FORMAT)
        jsonschema.validate(json.loads(resp.json()["choices"][0]["message"]["content"]), OUTLINE)


def test_a_default_script_wins_over_auto_mode() -> None:
    script = parse_script({"replies": [{"content": "from the file"}]})
    with serve_in_thread(0, script) as sim, httpx.Client(base_url=sim.url, timeout=10) as http:
        resp = chat(http, "any", ASK, response_format=SCHEMA_FORMAT)
        assert resp.json()["choices"][0]["message"]["content"] == "from the file"


def test_auto_replies_wait_the_default_latency() -> None:
    with (
        serve_in_thread(0, latency_ms=300) as sim,
        httpx.Client(base_url=sim.url, timeout=10) as http,
    ):
        started = time.monotonic()
        resp = chat(http, "slow", ASK)
        # A lower bound only: the reply is held back by the configured latency.
        assert time.monotonic() - started >= 0.3
        assert "auto-generated" in resp.json()["choices"][0]["message"]["content"]


def test_the_simulator_up_starts_without_a_script_runs_in_auto_mode() -> None:
    # The exact command `leaflab up --model-sim` (no SCRIPT) runs, with no script in the env.
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEAFLAB_SIM_SCRIPT"}
    process = subprocess.Popen(model_sim_argv(port=port), env=env, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        body = {"model": "m", "messages": ASK, "response_format": SCHEMA_FORMAT}
        resp = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10)
        jsonschema.validate(json.loads(resp.json()["choices"][0]["message"]["content"]), OUTLINE)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert b"auto mode" in stderr
