"""JSON Schema plumbing for the filler: ``$ref`` lookup and ``allOf`` merging.

The filler works on one flat schema at a time, so references are followed and
``allOf`` parts merged (tightest bounds win) before a value is generated.
"""

from __future__ import annotations

from typing import Any

# Bounds where the tighter of two merged schemas is the larger / the smaller value.
_LOWER_BOUNDS = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
_UPPER_BOUNDS = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})
# A chain of references longer than this is a loop.
MAX_REF_HOPS = 64


class AutoError(ValueError):
    """A request auto mode cannot answer (e.g. a $ref that points nowhere); answered as 400."""


def _types(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


def _merge_types(a: Any, b: Any) -> Any:
    left, right = _types(a), _types(b)
    common = [t for t in left if t in right]
    # "integer" is a subset of "number".
    common += [t for t in left if t == "integer" and "number" in right and t not in common]
    common += [t for t in right if t == "integer" and "number" in left and t not in common]
    if not common:
        return b  # contradictory; the later part wins (best effort)
    return common[0] if len(common) == 1 else common


class Resolver:
    """Resolves references against one root schema."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise AutoError(f"only local $ref ('#/...') is supported, got {ref!r}")
        node = self.root
        for raw in [p for p in ref[1:].split("/") if p]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise AutoError(f"$ref {ref!r} points to nothing in the schema")
        return node

    def resolve(self, schema: Any) -> Any:
        """The schema with its ``$ref`` chain followed and ``allOf`` merged in."""
        hops = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            hops += 1
            if hops > MAX_REF_HOPS:
                raise AutoError(f"$ref loop at {schema['$ref']!r}")
            target = self.pointer(schema["$ref"])
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = self.merge(target, siblings) if siblings else target
        if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
            merged: Any = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged = self.merge(merged, self.resolve(part))
            schema = merged
        return schema

    def merge(self, a: Any, b: Any) -> Any:
        """Both schemas at once: ``allOf: [a, b]`` as one schema (best effort)."""
        if a is True or a is None or a == {}:
            return b
        if b is True or b is None or b == {}:
            return a
        if a is False or b is False:
            return False
        a, b = self.resolve(a), self.resolve(b)
        out = dict(a)
        for key, value in b.items():
            if key not in out:
                out[key] = value
            elif key == "properties":
                props = dict(out[key])
                for name, sub in value.items():
                    props[name] = self.merge(props[name], sub) if name in props else sub
                out[key] = props
            elif key == "required":
                out[key] = list(dict.fromkeys([*out[key], *value]))
            elif key in _LOWER_BOUNDS and _number(out[key]) and _number(value):
                out[key] = max(out[key], value)
            elif key in _UPPER_BOUNDS and _number(out[key]) and _number(value):
                out[key] = min(out[key], value)
            elif key == "enum":
                common = [v for v in out[key] if v in value]
                out[key] = common or value
            elif key == "type":
                out[key] = _merge_types(out[key], value)
            elif key in ("items", "additionalProperties") and isinstance(value, dict | bool):
                out[key] = self.merge(out[key], value)
            else:
                out[key] = value
        return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
