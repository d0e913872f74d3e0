"""web_fetch: readable text from recorded pages, caps, and every failure path."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.web.page import WebFetchArgs, WebFetchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import RecordedWeb
from tests.worker.tools.web.conftest import settings_for


def fetch(tool: WebFetchTool, ctx: ToolContext, url: str, **kw: int) -> ToolError:
    with pytest.raises(ToolError) as caught:
        tool.run(WebFetchArgs(url=url, **kw), ctx)
    return caught.value


def test_an_article_becomes_title_and_main_text_without_chrome(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    result = WebFetchTool(research).run(WebFetchArgs(url=f"{recorded_web.base}/article.html"), ctx)
    assert result.data["title"] == "Sparse Retrieval Revisited"
    assert result.content.startswith("# Sparse Retrieval Revisited\nURL: http://127.0.0.1:")
    text = result.content
    assert "BM25 remains a strong baseline for scientific claim retrieval" in text
    assert "## Why fusion helps" in text
    assert "- Stemming matters for morphology-rich claims." in text
    assert "| BM25 | 0.665" in text
    assert "Überraschend robust — the naïve baseline." in text
    for chrome in ("UA-TRACKING-SCRIPT", "cookies", "Archive", "Related posts", "rights reserved"):
        assert chrome not in text, chrome
    assert result.data["content_type"] == "text/html" and not result.data["truncated"]


def test_long_text_comes_in_windows_the_model_can_page_through(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    tool = WebFetchTool(settings_for(recorded_web, tmp_path, web_text_max_chars=1000))
    url = f"{recorded_web.base}/notes.txt"
    first = tool.run(WebFetchArgs(url=url), ctx)
    assert first.data["truncated"] and first.data["chars"] == 150_000
    assert "call again with offset=1000" in first.content
    last = tool.run(WebFetchArgs(url=url, offset=149_500), ctx)
    assert not last.data["truncated"] and "offset=" not in last.content
    err = fetch(tool, ctx, url, offset=150_001)
    assert err.code == "invalid_arguments"


def test_size_cap(recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext) -> None:
    tool = WebFetchTool(settings_for(recorded_web, tmp_path, web_fetch_max_bytes=1000))
    err = fetch(tool, ctx, f"{recorded_web.base}/notes.txt")
    assert err.code == "too_large" and not err.retryable


def test_time_cap(recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext) -> None:
    recorded_web.stall("/article.html", 3)
    tool = WebFetchTool(settings_for(recorded_web, tmp_path, web_fetch_timeout_s=0.5))
    err = fetch(tool, ctx, f"{recorded_web.base}/article.html")
    assert err.code == "timeout" and err.retryable


@pytest.mark.parametrize(
    ("path", "code"),
    [("/image.png", "unsupported_content"), ("/paper.pdf", "unsupported_content")],
)
def test_content_that_is_not_text(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    path: str,
    code: str,
) -> None:
    err = fetch(WebFetchTool(research), ctx, f"{recorded_web.base}{path}")
    assert err.code == code
    if path.endswith(".pdf"):
        assert "pdf_fetch" in err.message


@pytest.mark.parametrize(("status", "retryable"), [(404, False), (500, True), (503, True)])
def test_http_errors(
    research: ResearchToolSettings,
    recorded_web: RecordedWeb,
    ctx: ToolContext,
    status: int,
    retryable: bool,
) -> None:
    recorded_web.fail_next("/article.html", [status])
    err = fetch(WebFetchTool(research), ctx, f"{recorded_web.base}/article.html")
    assert (err.code, err.retryable, err.details) == ("http_status", retryable, {"status": status})


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/x", "gopher://x/", "javascript:alert(1)", "x"]
)
def test_only_http_and_https(research: ResearchToolSettings, ctx: ToolContext, url: str) -> None:
    err = fetch(WebFetchTool(research), ctx, url)
    assert err.code == "invalid_url" and err.category == "validation"


def test_nobody_listening_is_a_retryable_network_error(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    from tests.fixtures.dead_servers import closed_port

    port = closed_port()
    tool = WebFetchTool(settings_for(recorded_web, tmp_path, web_allow=f"127.0.0.1:{port}"))
    err = fetch(tool, ctx, f"http://127.0.0.1:{port}/")
    assert err.code == "unreachable" and err.retryable
