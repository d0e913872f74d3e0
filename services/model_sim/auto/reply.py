"""Auto mode's answer to one request: a tool call, schema-valid JSON or plain text.

Deterministic: the random choices are seeded from a hash of what the request
asks (model, messages, response format, tools, tool choice), so the same request
always gets the same reply, across restarts too.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from services.model_sim.auto.candidates import Candidates, harvest
from services.model_sim.auto.schema_fill import fill_schema
from services.model_sim.auto.schema_refs import AutoError
from services.model_sim.auto.sources import RESULT_HEADER, gather, protocol_tools
from services.model_sim.auto.text import after_tool_answer, plain_answer, sentence
from services.model_sim.auto.tool_args import (
    call_arguments,
    chosen_tool,
    functions_of,
    protocol_block,
    tool_call,
)
from services.model_sim.auto.tool_inputs import SIMULATED_LABEL
from services.model_sim.script import ScriptEntry
from services.model_sim.state import message_text

_SEEDED_FIELDS = ("model", "messages", "response_format", "tools", "tool_choice")


def request_seed(body: dict[str, Any]) -> int:
    """The seed for one request: equal requests, equal seeds."""
    seeded = {k: body.get(k) for k in _SEEDED_FIELDS}
    digest = hashlib.sha256(json.dumps(seeded, sort_keys=True, default=str).encode())
    return int.from_bytes(digest.digest()[:8], "big")


def _schema_of(response_format: Any) -> tuple[str, Any]:
    """("text" | "json_object" | "json_schema", the schema); bad formats are a 400."""
    if response_format is None:
        return "text", None
    if not isinstance(response_format, dict):
        raise AutoError("response_format must be an object")
    kind = response_format.get("type")
    if kind in ("text", "json_object"):
        return str(kind), None
    if kind != "json_schema":
        raise AutoError("response_format.type must be 'text', 'json_object' or 'json_schema'")
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise AutoError("response_format.json_schema must be an object with a 'schema'")
    schema = spec.get("schema", {"type": "object"})
    if not isinstance(schema, dict | bool):
        raise AutoError("response_format.json_schema.schema must be a JSON Schema object")
    return "json_schema", schema


def _json_object(cands: Candidates, rng: random.Random) -> dict[str, Any]:
    return {"topic": cands.topic or "the request", "answer": sentence(cands, rng)}


def _labelled(text: str) -> ScriptEntry:
    """A plain-text reply, marked as the simulator's (one label, at the end, everywhere)."""
    separator = "\n" if "\n" in text else " "  # a list ends before the label
    return ScriptEntry(content=f"{text}{separator}{SIMULATED_LABEL}")


def auto_reply(body: dict[str, Any]) -> ScriptEntry:
    """The reply auto mode plays for this request body (validated by the app)."""
    messages: list[dict[str, Any]] = body["messages"]
    rng = random.Random(request_seed(body))
    kind, schema = _schema_of(body.get("response_format"))
    cands = harvest(messages)
    sources = gather(messages)
    native = functions_of(body.get("tools") or [])
    # A client without native tools lists them in the prompt (the JSON tool protocol).
    functions = native or functions_of(protocol_tools(messages))
    last = messages[-1]
    # A JSON-protocol tool result arrives as a user message; it is a tool result still.
    protocol_result = last.get("role") == "user" and RESULT_HEADER.match(message_text(last))
    last_role = "tool" if protocol_result else last.get("role")
    planned = chosen_tool(functions, body.get("tool_choice"), sources, last_role, rng)
    if planned is not None:
        function = functions[planned.name]
        if native:
            return ScriptEntry(tool_calls=[tool_call(function, planned, sources, cands, rng)])
        arguments = call_arguments(function, planned, sources, cands, rng)
        return ScriptEntry(content=protocol_block(planned.name, arguments))
    if kind == "json_schema":
        value = fill_schema(schema, cands, rng)
        return ScriptEntry(content=json.dumps(value, ensure_ascii=False))
    if kind == "json_object":
        return ScriptEntry(content=json.dumps(_json_object(cands, rng), ensure_ascii=False))
    if last_role == "tool":
        return _labelled(after_tool_answer(sources.request, sources.results))
    return _labelled(plain_answer(cands, rng))
