"""Auto mode's schema filler: every generated value validates, and values come from the request."""

from __future__ import annotations

import random
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.model_sim.auto.candidates import Candidates, harvest
from services.model_sim.auto.schema_fill import fill_schema
from services.model_sim.auto.schema_refs import AutoError

DOC_A = "0a4d2c1e-7f5b-4c3a-9e8d-1b2c3d4e5f60"
DOC_B = "1b5e3d2f-8a6c-4d4b-8f9e-2c3d4e5f6071"
CHUNK_A = "2c6f4e3a-9b7d-4e5c-a0af-3d4e5f607182"
CHUNK_B = "3d7a5f4b-ac8e-4f6d-b1b0-4e5f60718293"
MESSAGES = [
    {"role": "system", "content": "You take structured notes on papers for a survey."},
    {
        "role": "user",
        "content": (
            "Take notes on event-triggered control. Event-triggered control samples only "
            "when an error threshold is crossed. It reduces network load in practice.\n"
            f'{{"document_id": "{DOC_A}", "chunk_id": "{CHUNK_A}", '
            '"page": 4, "key": "tabuada2007"}\n'
            f'{{"document_id": "{DOC_B}", "chunk_id": "{CHUNK_B}", '
            '"page": 9, "key": "heemels2012"}\n'
            "Cite sources as [@tabuada2007] or [@heemels2012; @girard2015]."
        ),
    },
]
CANDS = harvest(MESSAGES)
FIELD_NAMES = ["title", "claim", "document_id", "chunk_id", "key", "keys", "page", "summary", "x"]


def fill(schema: Any, seed: int = 1, cands: Candidates = CANDS) -> Any:
    value = fill_schema(schema, cands, random.Random(seed))
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
    return value


# -- a small strategy of schemas built from the supported keywords --------------------


def _string_schema() -> st.SearchStrategy[dict[str, Any]]:
    lengths = st.tuples(st.integers(0, 12), st.integers(0, 90)).map(sorted)
    bounded = lengths.map(
        lambda b: {"type": "string", "minLength": b[0], "maxLength": max(b[1], 1)}
    )
    formats = st.sampled_from(["date", "date-time", "email", "uri", "uuid"]).map(
        lambda f: {"type": "string", "format": f}
    )
    patterns = st.sampled_from([r"^[a-z]+[0-9]{4}$", r"^\d+$", r"^[A-Z]"]).map(
        lambda p: {"type": "string", "pattern": p}
    )
    return st.one_of(st.just({"type": "string"}), bounded, formats, patterns)


def _number_schema() -> st.SearchStrategy[dict[str, Any]]:
    def build(kind: str, lo: int, span: int, excl: bool) -> dict[str, Any]:
        if excl:
            return {"type": kind, "exclusiveMinimum": lo, "exclusiveMaximum": lo + span + 2}
        return {"type": kind, "minimum": lo, "maximum": lo + span}

    return st.builds(
        build,
        st.sampled_from(["integer", "number"]),
        st.integers(-50, 50),
        st.integers(0, 20),
        st.booleans(),
    )


LEAVES = st.one_of(
    _string_schema(),
    _number_schema(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(st.sampled_from(["a", "b", "c", 1, None]), min_size=1, max_size=4, unique=True).map(
        lambda e: {"enum": e}
    ),
    st.sampled_from(
        [{"const": "fixed"}, {"type": ["string", "null"]}, {"type": ["integer", "string"]}]
    ),
)


def _compound(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def obj(props: dict[str, Any], n_req: int, closed: bool) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": props,
            "required": list(props)[:n_req],
        }
        if closed:
            schema["additionalProperties"] = False
        return schema

    def objects_named(
        names: list[str], closed: st.SearchStrategy[bool]
    ) -> st.SearchStrategy[dict[str, Any]]:
        props = st.dictionaries(st.sampled_from(names), children, max_size=4)
        return st.builds(obj, props, st.integers(0, 4), closed)

    objects = objects_named(FIELD_NAMES, st.booleans())
    # allOf parts with disjoint property names (overlapping ones may contradict).
    merged = st.builds(
        lambda a, b: {"allOf": [a, b]},
        objects_named(FIELD_NAMES[:5], st.just(False)),
        objects_named(FIELD_NAMES[5:], st.just(False)),
    )
    arrays = st.builds(
        lambda items, lo, extra: {
            "type": "array",
            "items": items,
            "minItems": lo,
            "maxItems": lo + extra,
        },
        children,
        st.integers(0, 3),
        st.integers(0, 3),
    )
    # oneOf branches must not both accept null, so its first branch is never nullable.
    any_of = st.builds(lambda c: {"anyOf": [c, {"type": "null"}]}, children)
    one_of = st.builds(
        lambda c: {"oneOf": [c, {"type": "null"}]}, st.one_of(_string_schema(), _number_schema())
    )
    choices = st.one_of(any_of, one_of)
    return st.one_of(objects, arrays, choices, merged)


SCHEMAS = st.recursive(LEAVES, _compound, max_leaves=12)


class TestEveryValueValidates:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(schema=SCHEMAS, seed=st.integers(0, 2**32))
    def test_generated_schemas(self, schema: dict[str, Any], seed: int) -> None:
        fill(schema, seed)

    @settings(max_examples=40, deadline=None)
    @given(schema=SCHEMAS)
    def test_behind_a_ref(self, schema: dict[str, Any]) -> None:
        fill(
            {
                "$defs": {"Inner": schema},
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"$ref": "#/$defs/Inner"}},
            }
        )

    def test_keywords_one_by_one(self) -> None:
        schemas: list[dict[str, Any]] = [
            {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
            {"type": "integer", "minimum": 3, "maximum": 3},
            {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 7},
            {"type": "object", "minProperties": 3, "properties": {"a": {"type": "string"}}},
            {
                "type": "object",
                "maxProperties": 1,
                "properties": {"a": {}, "b": {}},
                "required": ["b"],
            },
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
            },
            {
                "type": "array",
                "items": {"enum": ["x", "y", "z"]},
                "minItems": 3,
                "uniqueItems": True,
            },
            {"definitions": {"S": {"type": "string", "maxLength": 5}}, "$ref": "#/definitions/S"},
            {
                "allOf": [
                    {"properties": {"n": {"type": "integer", "minimum": 2}}, "required": ["n"]},
                    {"properties": {"n": {"maximum": 4}}},
                ]
            },
            {
                "$defs": {
                    "Section": {
                        "type": "object",
                        "required": ["title", "children"],
                        "properties": {
                            "title": {"type": "string"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Section"}},
                        },
                    }
                },
                "$ref": "#/$defs/Section",
            },
        ]
        for schema in schemas:
            fill(schema)

    def test_a_ref_to_nowhere_is_an_auto_error(self) -> None:
        with pytest.raises(AutoError, match="points to nothing"):
            fill_schema({"$ref": "#/$defs/Missing"}, CANDS, random.Random(0))


NOTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["notes"],
    "properties": {
        "notes": {
            "type": "array",
            "minItems": 4,
            "maxItems": 4,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["document_id", "chunk_id", "page", "key", "claim", "kind"],
                "properties": {
                    "document_id": {"type": "string"},
                    "chunk_id": {"type": "string"},
                    "page": {"type": "integer", "minimum": 1},
                    "key": {"type": "string"},
                    "claim": {"type": "string", "maxLength": 120},
                    "kind": {"enum": ["method", "result", "limitation", "assumption"]},
                },
            },
        }
    },
}


class TestValuesComeFromTheRequest:
    def test_ids_keys_and_pages_are_the_messages_own_and_belong_together(self) -> None:
        notes = fill(NOTES_SCHEMA)["notes"]
        rows = {(n["document_id"], n["chunk_id"], n["page"], n["key"]) for n in notes}
        assert rows == {(DOC_A, CHUNK_A, 4, "tabuada2007"), (DOC_B, CHUNK_B, 9, "heemels2012")}

    def test_enum_values_vary_along_a_list(self) -> None:
        for seed in range(5):
            kinds = [n["kind"] for n in fill(NOTES_SCHEMA, seed)["notes"]]
            assert len(set(kinds)) == 4, kinds  # four items, four enum values: all differ

    def test_citation_keys_come_from_pandoc_citations(self) -> None:
        schema = {
            "type": "object",
            "required": ["citations"],
            "properties": {
                "citations": {
                    "type": "array",
                    "minItems": 3,
                    "maxItems": 3,
                    "items": {"type": "string"},
                }
            },
        }
        cited = fill(schema)["citations"]
        assert sorted(cited) == ["girard2015", "heemels2012", "tabuada2007"]

    def test_without_ids_in_the_messages_ids_are_deterministic_uuids(self) -> None:
        bare = harvest([{"role": "user", "content": "Note something about robust control."}])
        schema = {
            "type": "object",
            "required": ["chunk_id"],
            "properties": {"chunk_id": {"type": "string"}},
        }
        one, two = fill(schema, 7, bare), fill(schema, 7, bare)
        assert one == two
        assert re.fullmatch(
            r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", one["chunk_id"]
        )

    def test_prose_is_made_of_the_user_message(self) -> None:
        def _split_sentences(text: str) -> list[str]:
            return re.split(r"(?<=[.!?])\s+", text)

        schema = {
            "type": "object",
            "required": ["summary"],
            "properties": {"summary": {"type": "string"}},
        }
        summary = fill(schema)["summary"]
        # A paragraph field: whole sentences of the messages, one after another.
        assert summary and all(s in CANDS.sentences for s in _split_sentences(summary))
        assert "{" not in summary  # JSON records are not prose

    def test_pattern_takes_a_matching_candidate(self) -> None:
        schema = {"type": "string", "pattern": r"^[a-z]+\d{4}$"}
        assert fill(schema) in {"tabuada2007", "heemels2012", "girard2015"}

    def test_same_seed_same_value_other_seed_other_value(self) -> None:
        values = [fill(NOTES_SCHEMA, seed) for seed in (3, 3, 4)]
        assert values[0] == values[1]
        assert values[0] != values[2]


class TestPlausibleChoices:
    def test_flags_read_as_no_problem(self) -> None:
        names = ["supported", "needs_checking", "unsupported", "is_fabricated", "relevant"]
        schema = {
            "type": "object",
            "required": names,
            "properties": {n: {"type": "boolean"} for n in names},
        }
        assert fill(schema) == {
            "supported": True,
            "needs_checking": False,
            "unsupported": False,
            "is_fabricated": False,
            "relevant": True,
        }

    def test_nested_locators_stay_within_their_notes_document(self) -> None:
        chunks = [(DOC_A, CHUNK_A, 4), (DOC_A, CHUNK_B, 5), (DOC_B, "c3", 9), (DOC_B, "c4", 11)]
        lines = [f'{{"document_id": "{d}", "chunk_id": "{c}", "page": {p}}}' for d, c, p in chunks]
        cands = harvest([{"role": "user", "content": "Notes, please.\n" + "\n".join(lines)}])
        locator = {
            "type": "object",
            "required": ["chunk_id", "page"],
            "properties": {"chunk_id": {"type": "string"}, "page": {"type": "integer"}},
        }
        note = {
            "type": "object",
            "required": ["document_id", "locators"],
            "properties": {
                "document_id": {"type": "string"},
                "locators": {"type": "array", "minItems": 2, "maxItems": 2, "items": locator},
            },
        }
        schema = {"type": "array", "minItems": 4, "maxItems": 4, "items": note}
        document_of = {(c, p): d for d, c, p in chunks}
        for seed in range(5):
            for item in fill(schema, seed, cands):
                places = {document_of[(loc["chunk_id"], loc["page"])] for loc in item["locators"]}
                assert places == {item["document_id"]}
