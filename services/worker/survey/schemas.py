"""JSON schemas of each stage's structured reply, built per request.

Wherever a value must point at something real (a citation key, a chunk of a
paper, a claim to judge) the allowed values are listed as an ``enum`` built from
what is in hand, so a schema-following model (and the simulator's auto mode)
can only name real things. Every object is strict: all properties required, no
others.
"""

from __future__ import annotations

from typing import Any

VERDICTS = ("supported", "partially_supported", "unsupported")


def _text() -> dict[str, Any]:
    return {"type": "string"}


def _prose() -> dict[str, Any]:
    """Text a reader sees: a grammar-following server cannot leave it empty."""
    return {"type": "string", "minLength": 1}


def _some(items: dict[str, Any]) -> dict[str, Any]:
    """An array that must hold at least one item. Small models answer an empty list
    where the stage needs one (an outline without sections, a section without
    paragraphs, a paragraph citing nothing): under a grammar they cannot. An array of
    an empty enum keeps no minimum, or a paper without chunks could not be answered."""
    array: dict[str, Any] = {"type": "array", "items": items}
    if not _names_nothing(items):
        array["minItems"] = 1
    return array


def _names_nothing(items: dict[str, Any]) -> bool:
    return "enum" in items and not items["enum"]


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _enum(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` for a strict JSON schema."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def plan_schema() -> dict[str, Any]:
    return _object(
        {
            "research_questions": _some(_prose()),
            "search_queries": _some(_prose()),
        }
    )


def note_schema(key: str, chunk_ids: list[str]) -> dict[str, Any]:
    locator = _object({"chunk_id": _enum(chunk_ids), "evidence": _text()})
    return _object(
        {
            "key": _enum([key]),
            "problem": _text(),
            "method": _text(),
            "assumptions": _text(),
            "results": _text(),
            "limitations": _text(),
            "locators": _some(locator) if chunk_ids else {"type": "array", "items": locator},
        }
    )


def outline_schema(keys: list[str]) -> dict[str, Any]:
    section = _object({"title": _prose(), "purpose": _text(), "keys": _some(_enum(keys))})
    return _object({"sections": _some(section)})


def section_schema(keys: list[str]) -> dict[str, Any]:
    paragraph = _object({"text": _prose(), "keys": _some(_enum(keys))})
    return _object({"paragraphs": _some(paragraph)})


def verify_schema(claim_ids: list[str]) -> dict[str, Any]:
    # One required property per claim: a reply cannot skip a claim.
    verdict = _object({"verdict": _enum(list(VERDICTS)), "reason": _text()})
    return _object({"verdicts": _object({cid: verdict for cid in claim_ids})})
