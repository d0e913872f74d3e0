"""web_search against recorded Brave answers on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.web.search import WebSearchArgs, WebSearchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import BRAVE_KEY, RecordedWeb
from tests.worker.tools.web.conftest import settings_for

SEARCH = "/res/v1/web/search"


def test_results_are_numbered_with_title_url_and_snippet(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    tool = WebSearchTool(research)
    result = tool.run(WebSearchArgs(query="retrieval augmented generation", count=2), ctx)
    assert result.content.startswith(
        "[1] Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks\n"
        "https://arxiv.org/abs/2005.11401\n"
    )
    assert "[2] What is RAG?" in result.content and "[3]" not in result.content
    assert "<strong>" not in result.content
    assert [r["url"] for r in result.data["results"]] == [
        "https://arxiv.org/abs/2005.11401",
        "https://example.org/what-is-rag",
    ]
    # Extra snippets are part of what the model reads.
    assert "without retraining" in result.data["results"][1]["snippet"]
    path, query, headers = recorded_web.requests[-1]
    assert path == SEARCH
    assert query == {"q": ["retrieval augmented generation"], "count": ["2"]}
    assert headers["x-subscription-token"] == BRAVE_KEY


def test_without_a_key_nothing_is_sent_and_the_error_says_what_to_set(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = WebSearchTool(settings_for(recorded_web, tmp_path, brave_api_key=None))
    with pytest.raises(ToolError) as caught:
        tool.run(WebSearchArgs(query="anything"), ctx)
    assert caught.value.code == "not_configured"
    assert "LEAFLAB_BRAVE_API_KEY" in caught.value.message
    assert not caught.value.retryable
    assert recorded_web.hits[SEARCH] == 0


def test_a_rejected_key_is_a_final_error(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = WebSearchTool(settings_for(recorded_web, tmp_path, brave_api_key="wrong"))
    with pytest.raises(ToolError) as caught:
        tool.run(WebSearchArgs(query="anything"), ctx)
    assert caught.value.code == "http_status"
    assert caught.value.details == {"status": 401}
    assert not caught.value.retryable


@pytest.mark.parametrize(("status", "retryable"), [(429, True), (503, True), (422, False)])
def test_upstream_failures_say_whether_a_retry_can_help(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    status: int,
    retryable: bool,
) -> None:
    recorded_web.fail_next(SEARCH, [status])
    with pytest.raises(ToolError) as caught:
        WebSearchTool(research).run(WebSearchArgs(query="rag"), ctx)
    assert caught.value.code == "http_status"
    assert caught.value.retryable is retryable
    assert f"answered {status}" in caught.value.message


def test_a_search_api_outside_the_allow_list_is_refused(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = WebSearchTool(settings_for(recorded_web, tmp_path, web_allow=""))
    with pytest.raises(ToolError) as caught:
        tool.run(WebSearchArgs(query="rag"), ctx)
    assert caught.value.code == "url_refused"
    assert recorded_web.hits[SEARCH] == 0


def test_bad_arguments_are_refused_before_running() -> None:
    tool = WebSearchTool(ResearchToolSettings())
    for raw in ({}, {"query": ""}, {"query": "x", "count": 0}, {"query": "x", "count": 99}):
        with pytest.raises(ToolError) as caught:
            tool.parse(raw)
        assert caught.value.code == "invalid_arguments"
