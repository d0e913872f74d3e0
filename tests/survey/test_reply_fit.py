"""The bounds a stage's schema is sent with (services/worker/survey/reply_fit.py).

Whether the largest bounded reply really fits is measured with a real tokenizer in
tests/real_model/test_reply_fit_real.py; here, the shape of the bounds."""

from __future__ import annotations

import copy

from services.worker.survey.reply_fit import MAX_TEXT_CHARS, MIN_TEXT_CHARS, fit_to_reply
from services.worker.survey.schemas import note_schema, outline_schema, section_schema


def test_every_string_and_array_is_bounded_and_the_original_untouched() -> None:
    schema = note_schema("k2020", ["k2020#p0", "k2020#p1"])
    before = copy.deepcopy(schema)
    bounded = fit_to_reply(schema, max_tokens=1024)
    assert schema == before
    props = bounded["properties"]
    for name in ("problem", "method", "assumptions", "results", "limitations"):
        assert MIN_TEXT_CHARS <= props[name]["maxLength"] <= MAX_TEXT_CHARS
    assert props["locators"]["maxItems"] >= 1
    assert props["locators"]["items"]["properties"]["evidence"]["maxLength"] >= MIN_TEXT_CHARS
    # Values that must name something real stay enums, unbounded by length.
    assert "maxLength" not in props["key"]
    assert "maxLength" not in props["locators"]["items"]["properties"]["chunk_id"]


def test_a_smaller_reply_gets_fewer_items_before_shorter_strings_go_under_the_floor() -> None:
    small = fit_to_reply(section_schema(["a2020", "b2021"]), max_tokens=128)
    large = fit_to_reply(section_schema(["a2020", "b2021"]), max_tokens=4096)
    small_p, large_p = small["properties"]["paragraphs"], large["properties"]["paragraphs"]
    assert small_p["maxItems"] < large_p["maxItems"]
    assert small_p["items"]["properties"]["text"]["maxLength"] >= MIN_TEXT_CHARS
    assert large_p["items"]["properties"]["text"]["maxLength"] == MAX_TEXT_CHARS


def test_bounds_already_there_are_kept_when_tighter_and_min_items_is_honoured() -> None:
    schema = outline_schema(["a2020", "b2021", "c2022"])
    section = schema["properties"]["sections"]
    section["minItems"] = 3
    section["items"]["properties"]["title"]["maxLength"] = 30
    bounded = fit_to_reply(schema, max_tokens=64)
    sections = bounded["properties"]["sections"]
    assert sections["maxItems"] >= 3
    assert sections["items"]["properties"]["title"]["maxLength"] <= 30
    # An array of enum values never asks for more items than there are values.
    assert sections["items"]["properties"]["keys"]["maxItems"] <= 3
