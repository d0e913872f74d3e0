"""What every request body and text parameter must be before it reaches the database.

PostgreSQL cannot store a NUL byte in ``text`` or ``jsonb``; sent through, it
fails inside the transaction and would surface as a 500. Refusing it here,
while the request is parsed, turns it into a 422 that names the field. The
nesting cap keeps a hostile ``{"input": [[[[…]]]]}`` from being walked or
stored at all.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

MAX_DEPTH = 32
# Declared on every request string in OpenAPI, so the schema says what is refused.
NO_NUL = r"^[^\x00]*$"
NOT_BLANK = r"^[^\x00]*\S[^\x00]*$"


def _check_tree(value: Any) -> None:
    """Raise ValueError on a NUL byte in any string (keys too) or nesting deeper than MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("text must not contain NUL (\\u0000) characters")
        elif isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)


def _declare_no_nul(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        _mark_strings(prop)


def _mark_strings(node: dict[str, Any]) -> None:
    if node.get("type") == "string" and not ({"pattern", "enum", "const"} & node.keys()):
        node["pattern"] = NO_NUL
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            _mark_strings(sub)
    if isinstance(node.get("items"), dict):
        _mark_strings(node["items"])


class RequestBody(BaseModel):
    """Base of every JSON request body: unknown fields refused, no NUL, bounded nesting."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_declare_no_nul)

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        _check_tree(data)
        return data
