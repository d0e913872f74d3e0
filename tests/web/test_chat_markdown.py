"""The chat page shows an assistant's Markdown as a reader expects it (bold, lists, tables,
highlighted code, KaTeX maths with its fonts served by Leaflab itself), live and after a
reload; a hostile answer runs nothing; a "thinking…" placeholder stands until the first
token, then the answer grows as it streams."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, Route, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir

RICH = r"""Here is **the result**:

- first point
- second point

| n | n² |
|---|----|
| 2 | 4 |
| 3 | 9 |

```python
def square(x):
    return x ** 2
```

Euler's identity $e^{i\pi}+1=0$ holds, and

$$
\int_0^1 x^2\,dx = \frac{1}{3}
$$
"""
HOSTILE = (
    '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> '
    "[click me](javascript:window.__xss=3) ![pic](javascript:window.__xss=4) "
    '<a href="javascript:window.__xss=5">raw link</a> '
    r"$\href{javascript:window.__xss=6}{maths link}$"
)
# Every attribute of every element in the conversation, for the hostile test.
ATTRIBUTES = """() => [...document.querySelectorAll('#messages *')]
  .flatMap((e) => [...e.attributes].map((a) => [e.tagName, a.name, a.value]))"""
KATEX_FONT_LOADED = """() => [...document.fonts].some(
  (f) => f.family.replace(/"/g, '') === 'KaTeX_Main' && f.status === 'loaded')"""


@pytest.fixture(scope="module")
def member(session_factory: sessionmaker[Session]) -> TestUser:
    return make_user(session_factory)


@pytest.fixture
def offline(context: BrowserContext, running: RunningStack) -> Iterator[list[str]]:
    """Refuses every request not to Leaflab itself, recording it: a page that works under
    this needs no CDN."""
    elsewhere: list[str] = []

    def only_leaflab(route: Route) -> None:
        if route.request.url.startswith(running.url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", only_leaflab)
    yield elsewhere


def _ask(context: BrowserContext, running: RunningStack, user: TestUser, script: dict) -> Page:
    with client_for(running.url, user) as client:
        session = client.post("/v1/sessions", json={"title": "markdown"}).json()
    running.sim.set_script(session["id"], script)
    page = login(context, running.url, user.key, next_path=f"/?session={session['id']}")
    expect(page.get_by_test_id("bar-disk-text")).not_to_be_empty()  # the page has loaded
    page.get_by_test_id("chat-input").fill("answer in markdown")
    page.get_by_test_id("chat-send").click()
    return page


def _assert_rich(page: Page) -> None:
    answer = page.get_by_test_id("message-assistant").last
    expect(answer.locator("strong")).to_have_text("the result")
    expect(answer.locator("ul > li")).to_have_text(["first point", "second point"])
    expect(answer.locator("table th")).to_have_text(["n", "n²"])
    expect(answer.locator("table tbody td")).to_have_text(["2", "4", "3", "9"])
    code = answer.locator("pre code.hljs.language-python")
    expect(code).to_contain_text("def square(x):")
    expect(code.locator(".hljs-keyword")).to_have_text(["def", "return"])
    expect(answer.locator("p .katex")).to_have_count(1)  # inline maths
    expect(answer.locator(".math-display .katex-display")).to_have_count(1)
    shown = answer.inner_text()
    for raw in ("**the", "| n |", "```", "$e^", "$$", "\\frac", "- first"):
        assert raw not in shown, (raw, shown)


class TestChatMarkdown:
    def test_bold_lists_tables_code_and_maths_render_as_elements_offline(
        self,
        running: RunningStack,
        context: BrowserContext,
        member: TestUser,
        offline: list[str],
    ) -> None:
        page = _ask(context, running, member, {"latency_ms": 10, "replies": [{"content": RICH}]})
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded", timeout=30_000)
        _assert_rich(page)
        # KaTeX's fonts come from /static/vendor (font-src 'self'), not from a CDN.
        page.wait_for_function(KATEX_FONT_LOADED)
        page.screenshot(path=str(screenshot_dir() / "chat-markdown.png"), full_page=True)
        page.reload()  # history renders the same Markdown
        expect(page.get_by_test_id("message-assistant")).to_have_count(1)
        _assert_rich(page)
        assert offline == []

    def test_a_hostile_answer_runs_nothing_and_shows_its_markup_as_text(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        page = _ask(context, running, member, {"latency_ms": 10, "replies": [{"content": HOSTILE}]})
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded", timeout=30_000)
        for _ in range(2):  # live, then from history
            answer = page.get_by_test_id("message-assistant").last
            expect(answer).to_contain_text("raw link")
            # Nothing ran, and nothing is left that could: no handler, no script URL.
            assert page.evaluate("window.__xss") is None
            for tag, name, value in page.evaluate(ATTRIBUTES):
                assert not name.startswith("on"), (tag, name, value)
                assert "javascript:" not in value.lower(), (tag, name, value)
            assert page.locator("#messages img, #messages script, #messages iframe").count() == 0
            # The markup is shown as the characters the model wrote.
            expect(answer).to_contain_text('<img src=x onerror="window.__xss=1">')
            expect(answer).to_contain_text("<script>window.__xss=2</script>")
            expect(answer).to_contain_text("[click me](javascript:window.__xss=3)")
            page.reload()
            expect(page.get_by_test_id("message-assistant")).to_have_count(1)

    def test_thinking_shows_until_the_first_token_then_the_answer_streams_in(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        reply = {
            "content": "**First** part, then the rest of the answer.",
            "delay_ms": 2000,
            "stall_after_tokens": 1,
            "stall_ms": 3000,
        }
        page = _ask(context, running, member, {"replies": [reply]})
        thinking = page.get_by_test_id("message-thinking")
        expect(thinking).to_have_text("Assistantthinking…")
        expect(page.get_by_test_id("message-assistant")).to_have_count(0)
        # The first token, then a 3 s silence (the worker publishes what it buffered when
        # the next token comes): the placeholder is gone, the word so far is shown (as
        # Markdown), the rest not yet.
        streamed = page.locator("[data-testid=message-assistant][data-streamed=true]")
        expect(streamed.locator("strong")).to_have_text("First", timeout=30_000)
        expect(thinking).to_have_count(0)
        assert "rest of the answer" not in streamed.inner_text()
        expect(streamed).to_contain_text("then the rest of the answer.", timeout=30_000)
        expect(page.get_by_test_id("turn-status")).to_have_text("succeeded")
        expect(thinking).to_have_count(0)
