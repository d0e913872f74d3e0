"""The pure parts of a survey: citation keys in text, key making, year scope, LaTeX escaping,
and what counts as a valid structured reply."""

from __future__ import annotations

import json
import uuid

from services.worker.survey.citations import guess_year, keys_in, make_key, strip_citations
from services.worker.survey.context import SurveyJob
from services.worker.survey.latex import escape
from services.worker.survey.schemas import note_schema
from services.worker.survey.structured import _parse, reply_check


def test_citations_are_found_and_stripped() -> None:
    text = "A holds [@smith2021event]. B and C [@a2020x; @b-2:1] too [see 3]."
    assert keys_in(text) == ["smith2021event", "a2020x", "b-2:1"]
    assert strip_citations(text) == "A holds. B and C too [see 3]."


def test_keys_are_readable_and_unique() -> None:
    taken: set[str] = set()
    first = make_key(title="Event-triggered control", authors=["Ana Smith"], year=2021, taken=taken)
    again = make_key(title="Event-triggered control", authors=["Ana Smith"], year=2021, taken=taken)
    untitled = make_key(title="The Élan of Solvers", authors=[], year=None, taken=taken)
    assert (first, again, untitled) == ("smith2021event", "smith2021eventa", "elanndsolvers")
    assert guess_year("2203.00130v1.pdf") == 2022 and guess_year("paper.pdf") is None


def _job(years: str | None) -> SurveyJob:
    return SurveyJob(uuid.uuid4(), None, uuid.uuid4(), None, {"topic": "t", "years": years})


def test_years_scope_keeps_unknown_years() -> None:
    assert _job("2019-2026").in_years(2019) and not _job("2019-2026").in_years(2018)
    assert _job("2019-2026").in_years(None) and _job(None).in_years(1950)
    assert _job("2020").in_years(2020) and not _job("2020").in_years(2021)


def test_latex_special_characters_are_escaped() -> None:
    assert escape("50% of x_1 & {y} ﬁne") == r"50\% of x\_1 \& \{y\} fine"


def test_a_reply_must_be_json_for_the_schema() -> None:
    schema = note_schema("k1", ["c1"])
    good = {
        "key": "k1",
        **{f: "x" for f in ("problem", "method", "assumptions", "results", "limitations")},
        "locators": [{"chunk_id": "c1", "evidence": "e"}],
    }
    assert _parse(json.dumps(good), schema) == (good, None)
    assert _parse("```json\n" + json.dumps(good) + "\n```", schema)[1] is None
    assert "invalid JSON" in str(_parse("Here you go", schema)[1])
    bad_chunk = {**good, "locators": [{"chunk_id": "c9", "evidence": "e"}]}
    assert "locators/0/chunk_id" in str(_parse(json.dumps(bad_chunk), schema)[1])
    # Leniency (section writing) lets an unknown key through to verify.
    assert (
        _parse(json.dumps({**good, "key": "zz"}), reply_check(schema, lenient_enums=True))[1]
        is None
    )
