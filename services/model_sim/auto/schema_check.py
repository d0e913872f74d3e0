"""A small JSON Schema check for the arguments auto mode builds itself.

Built arguments (a todo list, a file path) replace the schema filler's only when
they pass this check, so a tool whose schema differs from Leaflab's (another
field name, a shorter limit) still gets arguments that validate. It covers what
tool schemas use: ``$ref`` into ``$defs``, ``anyOf``/``oneOf``, types, enums,
lengths, item counts, required and extra properties; anything else passes.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node if node is not None else {}


def _type_ok(value: Any, declared: Any) -> bool:
    kinds = declared if isinstance(declared, list) else [declared]
    for kind in kinds:
        allowed = _TYPES.get(str(kind))
        if allowed is None:
            return True
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if isinstance(value, allowed):
            return True
    return False


def conforms(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    """Whether ``value`` satisfies ``schema`` (as far as this check reads it)."""
    schema = _resolve(schema, root)
    if schema is True or not isinstance(schema, dict):
        return schema is not False
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list):
            if not any(conforms(value, b, root) for b in schema[combinator]):
                return False
    if "type" in schema and not _type_ok(value, schema["type"]):
        return False
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return False
    if isinstance(value, str):
        return _string_ok(value, schema)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 10**9):
            return False
        return all(conforms(item, schema.get("items", True), root) for item in value)
    if isinstance(value, dict):
        return _object_ok(value, schema, root)
    return True


def _string_ok(value: str, schema: dict[str, Any]) -> bool:
    if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 10**12):
        return False
    pattern = schema.get("pattern")
    return not isinstance(pattern, str) or re.search(pattern, value) is not None


def _object_ok(value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any]) -> bool:
    props = schema.get("properties") or {}
    if any(name not in value for name in schema.get("required") or []):
        return False
    if schema.get("additionalProperties") is False and any(k not in props for k in value):
        return False
    return all(conforms(v, props[k], root) for k, v in value.items() if k in props)
