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
    is_key_field,
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
        # Markers (citation keys, chunk ids) chosen inside the object being filled:
        # its prose then says what the prompt says under them, so a paragraph that
        # cites a key is written from that paper's note, a note from its passages.
        self.chosen: list[str] = []

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
            return self._choose(copy.deepcopy(self._enum(schema["enum"], name, index)))
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
        if _is_prose(schema, name):
            return string_value(schema, name, self._focused(), self.rng, index)
        return self._choose(string_value(schema, name, self.cands, self.rng, index))

    def _choose(self, value: Any) -> Any:
        """``value``, noted as chosen when it names a marked block of the prompt."""
        if isinstance(value, str) and value in self.cands.blocks and value not in self.chosen:
            self.chosen.append(value)
        return value

    def _focused(self) -> Candidates:
        """The candidates with the chosen markers' sentences as the only prose (when they
        have none, every marked block's: the passages, never the prompt's asking)."""
        chosen = [self.cands.blocks.get(m, ()) for m in self.chosen]
        sentences = _interleaved(chosen) or _interleaved(list(self.cands.blocks.values()))
        if not self.chosen or not sentences:
            return self.cands
        return replace(self.cands, sentences=tuple(dict.fromkeys(sentences)))

    def _enum(self, values: list[Any], name: str, index: int) -> Any:
        # The chosen record's value wins; otherwise the index picks, so the items
        # of a list (citations, say) cycle through the enum instead of repeating.
        for given in self.cands.preferred_for(name):
            if given in values:
                return given
        # Among markers of the prompt's blocks (chunk ids, keys), those with something
        # to say: a note points at a passage with sentences, not at a bare table.
        telling = [v for v in values if isinstance(v, str) and self.cands.blocks.get(v)]
        pool = telling if telling and len(telling) < len(values) else values
        return pool[index % len(pool)]

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
        # Prose last: it is written from the markers the other fields chose.
        order = sorted(dict.fromkeys(order), key=lambda p: _is_prose(self._prop(props, p), p))
        out: dict[str, Any] = {}
        outer_context = set(self.context)
        outer_chosen = self.chosen
        self.chosen = []
        try:
            for prop in order:
                sub = props.get(prop, extra if isinstance(extra, dict) else {})
                if self.resolver.resolve(sub) is False:
                    continue
                out[prop] = self.value(sub, name=prop, index=index, depth=depth + 1)
                if is_id_field(prop) and isinstance(out[prop], str):
                    self.context.add((prop.lower(), json.dumps(out[prop])))
        finally:
            self.context = outer_context
            outer_chosen += [m for m in self.chosen if m not in outer_chosen]
            self.chosen = outer_chosen
        out = {p: out[p] for p in [*props, *out] if p in out}  # the schema's order
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

    def _prop(self, props: dict[str, Any], name: str) -> Any:
        return self.resolver.resolve(props.get(name, {}))

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


def _interleaved(blocks: list[tuple[str, ...]]) -> list[str]:
    """Sentence 1 of each block, then sentence 2 of each…: a paragraph citing three
    papers says something of each."""
    # Shortest first: three of them fit a paragraph, one from each paper.
    blocks = [tuple(sorted(b, key=len)) for b in blocks]
    depth = max((len(b) for b in blocks), default=0)
    return [b[i] for i in range(depth) for b in blocks if i < len(b)]


def _is_prose(schema: Any, name: str) -> bool:
    """A free string (no enum, const or format, not named like an id or a key): text a
    reply writes, not a value it picks."""
    if not isinstance(schema, dict) or is_id_field(name) or is_key_field(name):
        return False
    kind = schema.get("type")
    picks = ("enum", "const", "format", "pattern", "$ref", "anyOf", "oneOf", "allOf")
    return kind == "string" and not any(k in schema for k in picks)


def fill_schema(schema: Any, cands: Candidates, rng: random.Random) -> Any:
    """A value valid against ``schema`` (best effort for the unsupported keywords)."""
    return SchemaFiller(schema, cands, rng).fill()
