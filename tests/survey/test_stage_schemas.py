"""What each stage's schema lets a grammar-following server answer: never an empty
outline, section, paragraph or citation list (the packaged Gemma 270M answered exactly
that on the real server, and the report cited nothing), while the reply is still
checked without those floors so a freely decoding server keeps the stage's fallback."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from services.worker.llm.types import ModelResponse, Usage
from services.worker.survey.reply_fit import fit_to_reply
from services.worker.survey.schemas import (
    note_schema,
    outline_schema,
    plan_schema,
    section_schema,
)
from services.worker.survey.structured import answer_with_one_repair, reply_check

KEYS = ["devlin2019bert", "beltagy2019scibert"]


def _sent(schema: dict[str, Any]) -> dict[str, Any]:
    return fit_to_reply(schema, max_tokens=256)


def _valid(schema: dict[str, Any], value: Any) -> bool:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


SECTION = {"title": "Encoders", "purpose": "p", "keys": ["beltagy2019scibert"]}
PARAGRAPH = {"text": "SciBERT adapts BERT [@beltagy2019scibert].", "keys": ["beltagy2019scibert"]}


@pytest.mark.parametrize(
    ("schema", "empty", "full"),
    [
        (outline_schema(KEYS), {"sections": []}, {"sections": [SECTION]}),
        (outline_schema(KEYS), {"sections": [{**SECTION, "keys": []}]}, {"sections": [SECTION]}),
        (outline_schema(KEYS), {"sections": [{**SECTION, "title": ""}]}, {"sections": [SECTION]}),
        (section_schema(KEYS), {"paragraphs": []}, {"paragraphs": [PARAGRAPH]}),
        (
            section_schema(KEYS),
            {"paragraphs": [{**PARAGRAPH, "keys": []}]},
            {"paragraphs": [PARAGRAPH]},
        ),
        (
            plan_schema(),
            {"research_questions": [], "search_queries": ["bert"]},
            {"research_questions": ["Which encoders?"], "search_queries": ["bert"]},
        ),
    ],
)
def test_the_sent_schema_allows_no_empty_answer(
    schema: dict[str, Any], empty: dict[str, Any], full: dict[str, Any]
) -> None:
    assert not _valid(_sent(schema), empty)
    assert _valid(_sent(schema), full)


def test_a_note_points_at_a_passage_unless_the_paper_has_none() -> None:
    note = {
        "key": "k",
        "problem": "p",
        "method": "m",
        "assumptions": "a",
        "results": "r",
        "limitations": "l",
        "locators": [],
    }
    assert not _valid(_sent(note_schema("k", ["c1", "c2"])), note)
    # A paper without chunks cannot be made unanswerable by the floor.
    assert _valid(_sent(note_schema("k", [])), note)


def _reply(content: str) -> ModelResponse:
    return ModelResponse(
        content=content,
        tool_calls=[],
        finish_reason="stop",
        usage=Usage(input_tokens=1, output_tokens=1),
        model="m",
        request_id=None,
        latency_s=0.0,
    )


def test_an_empty_outline_from_a_free_server_is_accepted_without_a_repair() -> None:
    calls: list[list[dict[str, Any]]] = []

    def call(messages: list[dict[str, Any]], _chars_per_token: float) -> ModelResponse:
        calls.append(messages)
        return _reply('{"sections": []}')

    check = reply_check(outline_schema(KEYS), lenient_enums=False)
    data = answer_with_one_repair("survey_outline", check, [], call, max_tokens=256)
    assert data == {"sections": []} and len(calls) == 1


def test_the_lenient_check_accepts_a_paragraph_citing_inline_only() -> None:
    check = reply_check(section_schema(KEYS), lenient_enums=True)
    inline = {"paragraphs": [{"text": "As [@other2020x] shows.", "keys": ["other2020x"]}]}
    assert _valid(check, inline)
    assert not _valid(reply_check(section_schema(KEYS), lenient_enums=False), inline)
