"""Retries, backoff with jitter, and per-tool timeouts, counted on the recorded web.

Only a retryable failure of a retry-safe tool is tried again; attempts are
counted as requests the recorded server received.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pydantic import BaseModel

from services.worker.runtime.tool_attempts import backoff_delay, run_attempts
from services.worker.tools.base import ToolContext, ToolError, ToolResult
from services.worker.tools.web.page import WebFetchArgs, WebFetchTool
from services.worker.tools.web.search import WebSearchArgs, WebSearchTool
from services.worker.tools.web.settings import ResearchToolSettings
from tests.fixtures.recorded_web import RecordedWeb
from tests.worker.tools.web.conftest import settings_for

SEARCH = "/res/v1/web/search"
ARGS = WebSearchArgs(query="retrieval augmented generation")


class NotRetrySafeSearch(WebSearchTool):
    """The same search declared not retry-safe (as a tool with side effects would be)."""

    retry_safe = False


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_a_retryable_failure_of_a_retry_safe_tool_is_retried(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    recorded_web.fail_next(SEARCH, [503, 429])
    sleeps = Sleeps()
    result = run_attempts(WebSearchTool(research), ARGS, ctx, attempts=3, base_s=0.1, sleep=sleeps)
    assert result.data["results"]
    assert recorded_web.hits[SEARCH] == 3
    # Exponential backoff with jitter: [b, 2b] then [2b, 4b].
    assert 0.1 <= sleeps[0] <= 0.2 and 0.2 <= sleeps[1] <= 0.4


def test_retries_stop_after_the_configured_attempts(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    recorded_web.fail_next(SEARCH, [503] * 10)
    with pytest.raises(ToolError) as caught:
        run_attempts(WebSearchTool(research), ARGS, ctx, attempts=4, base_s=0, sleep=Sleeps())
    assert caught.value.code == "http_status" and caught.value.details["attempts"] == 4
    assert recorded_web.hits[SEARCH] == 4


def test_a_final_failure_is_not_retried(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    recorded_web.fail_next(SEARCH, [422])
    with pytest.raises(ToolError) as caught:
        run_attempts(WebSearchTool(research), ARGS, ctx, attempts=3, base_s=0, sleep=Sleeps())
    assert not caught.value.retryable and caught.value.details["attempts"] == 1
    assert recorded_web.hits[SEARCH] == 1


def test_a_tool_that_is_not_retry_safe_runs_once(
    research: ResearchToolSettings, recorded_web: RecordedWeb, ctx: ToolContext
) -> None:
    recorded_web.fail_next(SEARCH, [503])
    with pytest.raises(ToolError) as caught:
        run_attempts(NotRetrySafeSearch(research), ARGS, ctx, attempts=3, base_s=0, sleep=Sleeps())
    assert caught.value.retryable  # retryable in itself, but the tool forbids it
    assert recorded_web.hits[SEARCH] == 1


def test_jitter_spreads_the_waits() -> None:
    rng = random.Random(7)
    waits = [backoff_delay(2, 0.5, rng) for _ in range(50)]
    assert all(1.0 <= w <= 2.0 for w in waits)
    assert len({round(w, 6) for w in waits}) == 50


class SlowFetch(WebFetchTool):
    timeout_s = 0.3


def test_an_attempt_that_overruns_its_timeout_fails_as_timeout_and_is_retried(
    recorded_web: RecordedWeb, tmp_path: Path, ctx: ToolContext
) -> None:
    # The HTTP timeout (8 s) is longer than the tool's: the tool's own limit fires.
    recorded_web.stall("/article.html", 5)
    tool = SlowFetch(settings_for(recorded_web, tmp_path, web_fetch_timeout_s=8))
    with pytest.raises(ToolError) as caught:
        run_attempts(
            tool,
            WebFetchArgs(url=f"{recorded_web.base}/article.html"),
            ctx,
            attempts=2,
            base_s=0,
            sleep=Sleeps(),
        )
    err = caught.value
    # Without the tool's 0.3 s limit each attempt would wait out the 5 s stall and get
    # the page (the HTTP timeout is 8 s): the timeout error itself proves the limit
    # fired, with no clock for a loaded machine to fail.
    assert (err.code, err.category, err.retryable) == ("timeout", "timeout", True)
    assert err.details == {"timeout_s": 0.3, "attempts": 2}
    assert recorded_web.hits["/article.html"] == 2


class Crashing(WebSearchTool):
    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("bug in the tool")


def test_a_crashing_tool_becomes_a_structured_error(
    research: ResearchToolSettings, ctx: ToolContext
) -> None:
    with pytest.raises(ToolError) as caught:
        run_attempts(Crashing(research), ARGS, ctx, attempts=3, base_s=0, sleep=Sleeps())
    assert caught.value.code == "tool_crashed" and "bug in the tool" in caught.value.message
