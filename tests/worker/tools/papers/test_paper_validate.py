"""paper_validate: each verdict, retraction flags and DOI normalisation."""

from __future__ import annotations

from typing import Any

import pytest

from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.papers.openalex import normalise_doi
from services.worker.tools.papers.validate import PaperValidateTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import RecordedWeb

ATTENTION = "Attention Is All You Need"
ATTENTION_DOI = "10.48550/arXiv.1706.03762"
VASWANI = ["Ashish Vaswani", "Shazeer, Noam"]


def validate(research: ResearchToolSettings, ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    tool = PaperValidateTool(research)
    result = tool.run(tool.parse(raw), ctx)
    assert result.content.startswith(f"verdict: {result.data['verdict']}")
    return result.data


@pytest.mark.parametrize(
    "raw",
    [
        {"doi": ATTENTION_DOI, "title": ATTENTION, "authors": VASWANI, "year": 2017},
        {"doi": f"https://doi.org/{ATTENTION_DOI}"},
        {"title": "attention is all you need", "authors": ["Vaswani"], "year": 2018},
    ],
)
def test_confirmed(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext, raw: Any
) -> None:
    data = validate(research, ctx, **raw)
    assert data["verdict"] == "confirmed", data
    assert data["work"]["openalex_id"] == "W2963403868" and data["is_retracted"] is False


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"title": ATTENTION, "year": 2012}, "year 2012 given, OpenAlex has 2017"),
        ({"doi": ATTENTION_DOI, "authors": ["Geoffrey Hinton"]}, "none of the given authors"),
        (
            {"title": ATTENTION, "authors": ["Vaswani", "LeCun"]},
            "not among this work's authors: LeCun",
        ),
        ({"title": "Attention is all you need for translation"}, "closest recorded title"),
        ({"title": ATTENTION, "doi": "10.48550/arXiv.1706.03762", "year": 2009}, "year 2009"),
    ],
)
def test_partial(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    raw: Any,
    reason: str,
) -> None:
    data = validate(research, ctx, **raw)
    assert data["verdict"] == "partial", data
    assert any(reason in r for r in data["reasons"]), data["reasons"]


def test_mismatch_when_the_doi_names_another_work(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    data = validate(
        research, ctx, doi=ATTENTION_DOI, title="Deep Residual Learning for Image Recognition"
    )
    assert data["verdict"] == "mismatch"
    assert "different work: 'Attention Is All You Need'" in data["reasons"][-1]


def test_mismatch_when_the_title_carries_another_doi(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    data = validate(research, ctx, doi="10.1234/made.up.2017", title=ATTENTION)
    assert data["verdict"] == "mismatch"
    assert "its DOI is 10.48550/arxiv.1706.03762, not 10.1234/made.up.2017" in data["reasons"][-1]


@pytest.mark.parametrize(
    "raw", [{"title": "Frobnication of quantum teapots"}, {"doi": "10.9999/unknown.42"}]
)
def test_unverified(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext, raw: Any
) -> None:
    data = validate(research, ctx, **raw)
    assert data["verdict"] == "unverified" and data["work"] is None


def test_a_retracted_work_is_flagged(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    tool = PaperValidateTool(research)
    raw = {
        "doi": "doi:10.1016/S0140-6736(97)11096-0",
        "title": "Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
        "developmental disorder in children",
        "authors": ["Wakefield"],
        "year": 1998,
    }
    result = tool.run(tool.parse(raw), ctx)
    assert result.data["verdict"] == "confirmed"
    assert result.data["is_retracted"] is True
    assert result.content.startswith("verdict: confirmed (RETRACTED)")
    assert "RETRACTED: do not cite" in result.content
    assert result.data["doi"] == "10.1016/s0140-6736(97)11096-0"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.1000/ABC", "10.1000/abc"),
        ("  https://doi.org/10.1000/xyz.123. ", "10.1000/xyz.123"),
        ("http://dx.doi.org/10.1000/a%2Fb", "10.1000/a/b"),
        ("DOI:10.1016/S0140-6736(97)11096-0", "10.1016/s0140-6736(97)11096-0"),
        ("doi.org/10.48550/arXiv.1706.03762,", "10.48550/arxiv.1706.03762"),
        ("not a doi", None),
        ("11.1000/abc", None),
        ("10.12/too-short-registrant", None),
    ],
)
def test_doi_normalisation(raw: str, expected: str | None) -> None:
    assert normalise_doi(raw) == expected


@pytest.mark.parametrize(
    "raw", [{}, {"authors": ["Vaswani"]}, {"doi": "not-a-doi"}, {"title": "  "}]
)
def test_nothing_to_check_or_a_bad_doi_is_refused(research: ResearchToolSettings, raw: Any) -> None:
    with pytest.raises(ToolError) as caught:
        PaperValidateTool(research).parse(raw)
    assert caught.value.code == "invalid_arguments"
