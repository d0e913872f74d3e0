"""Auto-mode tool calls: whether to call a tool, which one, and its arguments.

The rule (kept simple so a test can predict it):
- ``tool_choice`` names a function → call it; ``"required"`` → call the tool the
  last user message names (else one picked by the request's seed);
- ``"auto"`` (or absent) → call a tool only when the last message is the user's
  and it asks for an offered tool by name ("use paper_search …", "call `todo`");
  otherwise answer text, which ends an agent's turn;
- ``"none"`` → text.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from services.model_sim.auto.candidates import Candidates
from services.model_sim.auto.schema_fill import fill_schema
from services.model_sim.auto.schema_refs import AutoError
from services.model_sim.script import ScriptToolCall
from services.model_sim.state import message_text


def _functions(tools: list[Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function
    return out


def _mentioned(names: list[str], text: str) -> str | None:
    """The first offered tool the text asks for: "use X", "call X", "run X", "`X`"."""
    for name in names:
        quoted = re.escape(name)
        asked = rf"\b(?:use|call|run|using|with)\s+(?:the\s+)?`?{quoted}`?(?![\w])|`{quoted}`"
        if re.search(asked, text, re.IGNORECASE):
            return name
    return None


def chosen_tool(
    tools: list[Any], choice: Any, messages: list[dict[str, Any]], rng: random.Random
) -> dict[str, Any] | None:
    """The function to call for this request, or None to answer text."""
    functions = _functions(tools)
    if choice is None or choice == "auto" or choice == "none" or choice == "required":
        if choice == "none":
            return None
        if choice == "required" and not functions:
            raise AutoError("tool_choice is 'required' but no tools were offered")
        last = messages[-1]
        named = (
            _mentioned(list(functions), message_text(last)) if last.get("role") == "user" else None
        )
        if named is not None:
            return functions[named]
        if choice == "required":
            names = sorted(functions)
            return functions[names[rng.randrange(len(names))]]
        return None
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise AutoError(
                "tool_choice must name a function: {'type': 'function', 'function': {'name': ...}}"
            )
        if name not in functions:
            raise AutoError(f"tool_choice names {name!r}, which is not among the tools offered")
        return functions[name]
    raise AutoError("tool_choice must be 'none', 'auto', 'required' or a named function")


def tool_call(function: dict[str, Any], cands: Candidates, rng: random.Random) -> ScriptToolCall:
    """A call of ``function`` with arguments generated from its ``parameters`` schema."""
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    elif isinstance(parameters, dict) and "type" not in parameters:
        parameters = {"type": "object", **parameters}  # tool arguments are an object
    arguments = fill_schema(parameters, cands, rng)
    if isinstance(arguments, dict):
        return ScriptToolCall(name=function["name"], arguments=arguments)
    # A parameters schema that is not an object: sent as the JSON text it generated.
    return ScriptToolCall(name=function["name"], arguments=json.dumps(arguments))
