"""paper_search against recorded OpenAlex answers on loopback."""

from __future__ import annotations

import pytest

from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.papers.search import PaperSearchArgs, PaperSearchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import RecordedWeb


def test_search_lists_works_with_year_authors_venue_and_doi(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    result = PaperSearchTool(research).run(
        PaperSearchArgs(query="attention is all you need", limit=5, year_from=2017, year_to=2021),
        ctx,
    )
    first = result.content.splitlines()[0]
    assert first == (
        "[1] Attention Is All You Need (2017) | Ashish Vaswani, Noam Shazeer, Niki Parmar, "
        "Jakob Uszkoreit et al. | arXiv (Cornell University) | doi:10.48550/arxiv.1706.03762 "
        "| openalex:W2963403868"
    )
    assert len(result.data["works"]) == 2
    path, query, _ = recorded_web.requests[-1]
    assert path == "/works"
    assert query["search"] == ["attention is all you need"] and query["per_page"] == ["5"]
    assert query["filter"] == ["from_publication_date:2017-01-01,to_publication_date:2021-12-31"]


@pytest.mark.parametrize(
    "query",
    [
        "10.48550/arXiv.1706.03762",
        "doi:10.48550/ARXIV.1706.03762",
        "https://doi.org/10.48550/arXiv.1706.03762",
    ],
)
def test_a_doi_query_looks_the_work_up_directly(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext, query: str
) -> None:
    result = PaperSearchTool(research).run(PaperSearchArgs(query=query), ctx)
    assert [w["openalex_id"] for w in result.data["works"]] == ["W2963403868"]
    assert recorded_web.requests[-1][0] == "/works/doi:10.48550/arxiv.1706.03762"


def test_retracted_works_are_marked(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    result = PaperSearchTool(research).run(PaperSearchArgs(query="ileal lymphoid hyperplasia"), ctx)
    assert result.content.startswith("[1] RETRACTED | ")
    assert result.data["works"][0]["is_retracted"] is True


def test_nothing_found(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    result = PaperSearchTool(research).run(PaperSearchArgs(query="frobnication theory"), ctx)
    assert result.content == "No works found for 'frobnication theory'."
    unknown = PaperSearchTool(research).run(PaperSearchArgs(query="10.9999/nothing.here"), ctx)
    assert unknown.data == {"works": []}


def test_openalex_down_is_a_retryable_error(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    recorded_web.fail_next("/works", [503])
    with pytest.raises(ToolError) as caught:
        PaperSearchTool(research).run(PaperSearchArgs(query="attention"), ctx)
    assert caught.value.code == "http_status" and caught.value.retryable
    assert "OpenAlex" in caught.value.message


def test_years_out_of_order_are_refused(research: ResearchToolSettings) -> None:
    with pytest.raises(ToolError) as caught:
        PaperSearchTool(research).parse({"query": "x", "year_from": 2020, "year_to": 2010})
    assert caught.value.code == "invalid_arguments"
