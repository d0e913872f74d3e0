"""Auto-mode tool calls: whether to call a tool, which one, and its arguments.

The rule (kept simple so a test can predict it):
- ``tool_choice`` names a function → call it; ``"required"`` → the next tool the
  latest request implies (else one picked by the request's seed);
- ``"auto"`` (or absent) → the next tool the latest user request implies or
  names (see :mod:`services.model_sim.auto.tool_plan`), one per round; once
  each was called, answer text, which ends an agent's turn;
- ``"none"`` → text.
Only offered tools are called; built arguments are used where they pass the
tool's schema, the schema filler supplies the rest.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

from services.model_sim.auto.candidates import Candidates
from services.model_sim.auto.schema_check import conforms
from services.model_sim.auto.schema_fill import fill_schema
from services.model_sim.auto.schema_refs import AutoError
from services.model_sim.auto.sources import Sources
from services.model_sim.auto.tool_inputs import planned_arguments
from services.model_sim.auto.tool_plan import PlannedCall, next_call
from services.model_sim.script import ScriptToolCall


def functions_of(tools: list[Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function
    return out


def chosen_tool(
    functions: dict[str, dict[str, Any]],
    choice: Any,
    sources: Sources,
    last_role: str | None,
    rng: random.Random,
) -> PlannedCall | None:
    """The call to make for this request, or None to answer text."""
    if choice is None or choice in ("auto", "none", "required"):
        if choice == "none":
            return None
        if choice == "required" and not functions:
            raise AutoError("tool_choice is 'required' but no tools were offered")
        # A turn moves on after the user's request or a tool result, never after itself.
        planned = next_call(sources, list(functions)) if last_role in ("user", "tool") else None
        if planned is not None:
            return planned
        if choice == "required":
            names = sorted(functions)
            return PlannedCall(names[rng.randrange(len(names))], "named")
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
        return PlannedCall(name, "named")
    raise AutoError("tool_choice must be 'none', 'auto', 'required' or a named function")


def _parameters(function: dict[str, Any]) -> Any:
    parameters = function.get("parameters")
    if parameters is None:
        return {"type": "object", "properties": {}}
    if isinstance(parameters, dict) and "type" not in parameters:
        return {"type": "object", **parameters}  # tool arguments are an object
    return parameters


def call_arguments(
    function: dict[str, Any],
    planned: PlannedCall,
    sources: Sources,
    cands: Candidates,
    rng: random.Random,
) -> Any:
    """Arguments for ``planned``: built from the request where they fit the schema."""
    parameters = _parameters(function)
    built = planned_arguments(planned.name, planned.kind, sources)
    scalars = {k.lower(): v for k, v in built.items() if isinstance(v, str)}
    arguments = fill_schema(parameters, replace(cands, preferred=scalars), rng)
    if not isinstance(arguments, dict) or not isinstance(parameters, dict):
        return arguments
    props = parameters.get("properties") or {}
    for name, value in built.items():
        if name in props and conforms(value, props[name], parameters):
            arguments[name] = value
    return arguments


def tool_call(
    function: dict[str, Any],
    planned: PlannedCall,
    sources: Sources,
    cands: Candidates,
    rng: random.Random,
) -> ScriptToolCall:
    """A native call of ``function`` with arguments that fit its ``parameters`` schema."""
    arguments = call_arguments(function, planned, sources, cands, rng)
    if isinstance(arguments, dict):
        return ScriptToolCall(name=function["name"], arguments=arguments)
    # A parameters schema that is not an object: sent as the JSON text it generated.
    return ScriptToolCall(name=function["name"], arguments=json.dumps(arguments))


def protocol_block(name: str, arguments: Any) -> str:
    """The JSON tool protocol's way to ask for a tool: one fenced block, nothing else."""
    request = {"tool": name, "arguments": arguments}
    return "```json\n" + json.dumps(request, ensure_ascii=False) + "\n```"
