"""A JSON Schema instance generator: a plausible value valid against the schema.

Supported: type (and lists of types), properties, required, additionalProperties,
min/maxProperties, enum, const, items, prefixItems (and draft-4 tuple items),
min/maxItems, uniqueItems, min/maxLength, minimum/maximum/exclusive*, integer
multipleOf, anyOf/oneOf (the first branch that is not just null), allOf
(merged), local $ref (#/$defs, #/definitions, any #/ pointer), format
(date, date-time, time, email, uri, uuid, hostname, ipv4/6), pattern (best
effort). Not supported: if/then/else, not, dependentSchemas, patternProperties,
contains, number multipleOf, remote $ref.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import replace
from typing import Any

from services.model_sim.auto.candidates import Candidates
from services.model_sim.auto.schema_refs import AutoError, Resolver
from services.model_sim.auto.schema_scalars import (
    boolean_for_field,
    is_id_field,
    number_value,
    string_value,
)

# Beyond this nesting depth only required properties and minItems items are
# generated, so recursive schemas (a tree of sections) end.
SHALLOW_DEPTH = 6
MAX_DEPTH = 40
DEFAULT_ITEMS = (1, 3)


class SchemaFiller:
    """Generates instances of one root schema from one request's candidates."""

    def __init__(self, root: Any, cands: Candidates, rng: random.Random) -> None:
        self.resolver = Resolver(root)
        self.root = root
        self.cands = cands
        self.rng = rng
        # Id fields already filled in the enclosing objects (``document_id`` of the
        # note whose locators are being filled), as (name, JSON value) pairs.
        self.context: set[tuple[str, str]] = set()

    def fill(self) -> Any:
        return self.value(self.root, name="", index=0, depth=0)

    def value(self, schema: Any, *, name: str, index: int, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise AutoError("the schema nests deeper than auto mode follows (recursive $ref?)")
        schema = self.resolver.resolve(schema)
        if schema is True or schema is None:
            schema = {}
        if schema is False:
            raise AutoError(f"no value satisfies the schema at {name or 'the top'} (false)")
        if not isinstance(schema, dict):
            raise AutoError(f"not a schema at {name or 'the top'}: {json.dumps(schema)[:80]}")
        if "const" in schema:
            return copy.deepcopy(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return copy.deepcopy(self._enum(schema["enum"], name, index))
        for combinator in ("anyOf", "oneOf"):
            branches = schema.get(combinator)
            if isinstance(branches, list) and branches:
                rest = {k: v for k, v in schema.items() if k != combinator}
                merged = self.resolver.merge(rest, self._branch(branches))
                return self.value(merged, name=name, index=index, depth=depth + 1)
        kind = self._type(schema)
        if kind == "object":
            return self._object(schema, index, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        if kind in ("integer", "number"):
            return number_value(schema, name, self.cands, self.rng, integer=kind == "integer")
        if kind == "boolean":
            given = [v for v in self.cands.for_name(name) if isinstance(v, bool)]
            return given[0] if given else boolean_for_field(name)
        if kind == "null":
            return None
        return string_value(schema, name, self.cands, self.rng, index)

    def _enum(self, values: list[Any], name: str, index: int) -> Any:
        # The chosen record's value wins; otherwise the index picks, so the items
        # of a list (citations, say) cycle through the enum instead of repeating.
        for given in self.cands.preferred_for(name):
            if given in values:
                return given
        return values[index % len(values)]

    def _branch(self, branches: list[Any]) -> Any:
        """The first branch that is not only ``null`` (a plausible reply fills the field)."""
        for branch in branches:
            resolved = self.resolver.resolve(branch)
            if resolved is False:
                continue
            if isinstance(resolved, dict) and resolved.get("type") == "null":
                continue
            return resolved
        return branches[0]

    def _type(self, schema: dict[str, Any]) -> str:
        declared = schema.get("type")
        if isinstance(declared, list):
            non_null = [t for t in declared if t != "null"]
            return str(non_null[0]) if non_null else "null"
        if isinstance(declared, str):
            return declared
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            return "object"
        if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "multipleOf")):
            return "number"
        return "string"

    def _record_for(self, props: dict[str, Any], index: int) -> dict[str, Any] | None:
        """A harvested record sharing at least two field names with this object."""
        names = {p.lower() for p in props}
        fitting = [r for r in self.cands.records if len(names & r.keys()) >= 2]
        if not fitting:
            return None
        best = max(len(names & r.keys()) for r in fitting)
        fitting = [r for r in fitting if len(names & r.keys()) == best]
        # Inside a note on one document, nested objects (its locators) take records
        # sharing an id with it when there are any.
        related = [r for r in fitting if self.context & {(k, json.dumps(v)) for k, v in r.items()}]
        fitting = related or fitting
        return fitting[index % len(fitting)]

    def _object(self, schema: dict[str, Any], index: int, depth: int) -> dict[str, Any]:
        props = schema.get("properties") or {}
        record = self._record_for(props, index)
        if record is None:
            return self._fill_object(schema, props, index, depth)
        outer = self.cands
        self.cands = replace(outer, preferred=record)
        try:
            return self._fill_object(schema, props, index, depth)
        finally:
            self.cands = outer

    def _fill_object(
        self, schema: dict[str, Any], props: dict[str, Any], index: int, depth: int
    ) -> dict[str, Any]:
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        extra = schema.get("additionalProperties", True)
        shallow = depth > SHALLOW_DEPTH
        order = [*required, *(p for p in props if p not in required and not shallow)]
        out: dict[str, Any] = {}
        outer_context = set(self.context)
        try:
            for prop in dict.fromkeys(order):
                sub = props.get(prop, extra if isinstance(extra, dict) else {})
                if self.resolver.resolve(sub) is False:
                    continue
                out[prop] = self.value(sub, name=prop, index=index, depth=depth + 1)
                if is_id_field(prop) and isinstance(out[prop], str):
                    self.context.add((prop.lower(), json.dumps(out[prop])))
        finally:
            self.context = outer_context
        minimum = int(schema.get("minProperties", 0))
        extra_schema = extra if isinstance(extra, dict) else {}
        while len(out) < minimum and extra is not False:
            prop = f"extra_{len(out)}"
            out[prop] = self.value(extra_schema, name=prop, index=index, depth=depth + 1)
        if "maxProperties" in schema:
            for prop in [p for p in reversed(list(out)) if p not in required]:
                if len(out) <= int(schema["maxProperties"]):
                    break
                del out[prop]
        return out

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> list[Any]:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        prefix = prefix if isinstance(prefix, list) else []
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        count = low if depth > SHALLOW_DEPTH else max(low, self.rng.randint(*DEFAULT_ITEMS))
        if isinstance(high, int):
            count = min(count, high)
        if items is False:
            count = min(count, len(prefix))
        # One base per list, then consecutive indexes: item i and i+1 pick different
        # enum values / harvested ids / keys whenever there are that many.
        base = self.rng.randrange(1000)
        unique = bool(schema.get("uniqueItems"))
        out: list[Any] = []
        seen: set[str] = set()
        attempt = 0
        while len(out) < count and attempt < count + 20:
            position = len(out)
            sub = prefix[position] if position < len(prefix) else items
            value = self.value(sub, name=name, index=base + attempt, depth=depth + 1)
            attempt += 1
            marker = json.dumps(value, sort_keys=True)
            if unique and marker in seen:
                continue
            seen.add(marker)
            out.append(value)
        return out


def fill_schema(schema: Any, cands: Candidates, rng: random.Random) -> Any:
    """A value valid against ``schema`` (best effort for the unsupported keywords)."""
    return SchemaFiller(schema, cands, rng).fill()
