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
from services.model_sim.auto.text import after_tool_answer, plain_answer, sentence
from services.model_sim.auto.tool_args import chosen_tool, tool_call
from services.model_sim.script import ScriptEntry

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


def _last_tool_name(messages: list[dict[str, Any]]) -> str | None:
    """The name of the tool whose result is the last message, if the request says."""
    call_id = messages[-1].get("tool_call_id")
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == call_id:
                name = (call.get("function") or {}).get("name")
                return str(name) if name else None
    return messages[-1].get("name") if isinstance(messages[-1].get("name"), str) else None


def auto_reply(body: dict[str, Any]) -> ScriptEntry:
    """The reply auto mode plays for this request body (validated by the app)."""
    messages: list[dict[str, Any]] = body["messages"]
    rng = random.Random(request_seed(body))
    kind, schema = _schema_of(body.get("response_format"))
    cands = harvest(messages)
    function = chosen_tool(body.get("tools") or [], body.get("tool_choice"), messages, rng)
    if function is not None:
        return ScriptEntry(tool_calls=[tool_call(function, cands, rng)])
    if kind == "json_schema":
        value = fill_schema(schema, cands, rng)
        return ScriptEntry(content=json.dumps(value, ensure_ascii=False))
    if kind == "json_object":
        return ScriptEntry(content=json.dumps(_json_object(cands, rng), ensure_ascii=False))
    if messages[-1].get("role") == "tool":
        return ScriptEntry(content=after_tool_answer(cands, _last_tool_name(messages)))
    return ScriptEntry(content=plain_answer(cands, rng))
