"""The Surveys pages in Chromium: the form shows the cost estimate before submitting, the
survey page follows the stages live and shows the finished report, its citations linked to
the library documents they come from.

The simulator runs in auto mode (no script): it plays a whole survey over the member's
library, one small shared PDF (tests/web/survey_stack.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import conversation
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.survey.scripts import FABRICATED, FABRICATED_CLAIM, expected_keys
from tests.web.browser import login, screenshot_dir
from tests.web.survey_stack import SurveyWebStack, survey_web_stack

TOPIC = "language models for scientific text <script>window.__xss=1</script>"
STAGES = ("plan", "gather", "read", "outline", "write", "verify", "assemble")
SURVEY_TIMEOUT_MS = 240_000
SUPPORTED = {"verdict": "supported", "reason": "the passage says so"}
# Records every stage's data-state change, so the test sees the page move stage by stage.
STAGE_LOG = """
document.addEventListener('DOMContentLoaded', () => {
  window.__stageLog = [];
  new MutationObserver((changes) => {
    for (const c of changes) {
      window.__stageLog.push([c.target.dataset.stage, c.target.dataset.state]);
    }
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['data-state'] });
});
"""

HOSTILE_MARKDOWN = """# Title <img src=x onerror=window.__xss=1>

Para **bold <b>x</b>** and *it* `<i>code</i>` [@a1; @b2:x] and [not a cite]
<script>window.__xss=2</script>
continued

## Needs checking

- item [@c3]
- **k**: x

1. one
2. two
"""
# The shared Markdown renderer's scripts, in the order pages load them (_markdown_head.html).
MARKDOWN_SCRIPTS = (
    "/static/vendor/markdown-it-15.0.3.min.js",
    "/static/vendor/dompurify-3.5.0.min.js",
    "/static/vendor/katex/katex-0.19.1.min.js",
    "/static/vendor/highlight-11.12.0.min.js",
    "/static/markdown_math.js",
    "/static/markdown_citations.js",
    "/static/markdown.js",
)
# Renders markdown as the survey page does (LeaflabMarkdown, headings pushed one level
# down, each [@key] swapped for the page's node) into the document.
RENDER = """(md) => {
  const cite = (k) => {
    const a = document.createElement('a');
    a.dataset.key = k;
    a.textContent = '@' + k;
    return a;
  };
  const box = document.createElement('div');
  box.append(LeaflabMarkdown.render(md, { citation: cite, headingShift: 1 }));
  document.body.append(box);
  return { tags: [...box.querySelectorAll('*')].map((e) => e.tagName),
           keys: [...box.querySelectorAll('a')].map((a) => a.dataset.key),
           h2: box.querySelector('h2').textContent, text: box.textContent };
}"""


@pytest.fixture(scope="module")
def survey_web(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> Iterator[SurveyWebStack]:
    base = tmp_path_factory.mktemp("web_survey")
    with survey_web_stack(stack, base, session_factory, isolated_redis_url) as built:
        yield built


def _form(context: BrowserContext, survey_web: SurveyWebStack) -> Page:
    page = login(context, survey_web.url, survey_web.member.key, next_path="/surveys")
    page.wait_for_selector("body[data-surveys-ready='1']")
    return page


class TestSurveyPages:
    def test_estimate_submit_watch_the_stages_and_read_the_cited_report(
        self, survey_web: SurveyWebStack, context: BrowserContext
    ) -> None:
        context.add_init_script(STAGE_LOG)
        page = _form(context, survey_web)
        estimate = page.get_by_test_id("survey-estimate")
        expect(estimate).to_have_attribute("data-state", "empty")
        page.get_by_test_id("survey-topic").fill(TOPIC)
        expect(estimate).to_have_attribute("data-state", "ok")
        expect(page.get_by_test_id("estimate-papers")).to_have_text("1")
        expect(page.get_by_test_id("estimate-budget")).to_have_text("Within your budget.")
        medium_calls = page.get_by_test_id("estimate-calls").inner_text()
        # Changing an input asks again: a short survey makes fewer model calls.
        with page.expect_request(lambda r: r.url.endswith("/v1/surveys/estimate")):
            page.get_by_test_id("survey-length").select_option("short")
        expect(page.get_by_test_id("estimate-calls")).not_to_have_text(medium_calls)
        assert int(page.get_by_test_id("estimate-calls").inner_text()) < int(medium_calls)
        expect(page.get_by_test_id("estimate-cost")).to_have_text(re.compile(r"^\$\d+\.\d{4}$"))
        page.get_by_test_id("survey-year-from").fill("2019")
        page.get_by_test_id("survey-year-to").fill("2026")
        expect(estimate).to_have_attribute("data-state", "ok")
        page.screenshot(path=str(screenshot_dir() / "survey_form.png"), full_page=True)

        page.get_by_test_id("survey-submit").click()
        page.wait_for_url(re.compile(r"/surveys/[0-9a-f-]{36}$"))
        job_id = page.url.rsplit("/", 1)[1]
        stages = page.get_by_test_id("survey-stage")
        expect(stages).to_have_count(len(STAGES))
        assert [s.get_attribute("data-stage") for s in stages.all()] == list(STAGES)
        expect(page.get_by_test_id("survey-status")).to_have_text(
            "succeeded", timeout=SURVEY_TIMEOUT_MS
        )
        for stage in STAGES:
            expect(page.locator(f"[data-stage={stage}]")).to_have_attribute("data-state", "done")
        seen = {tuple(x) for x in page.evaluate("window.__stageLog")}
        # Stages were shown live: the page saw work stages running, then done. Which
        # ones it caught running depends on timing (a one-paper read can pass between
        # two events on a loaded machine), so any two of them, not named ones.
        caught = {stage for stage, state in seen if state == "running"}
        assert len(caught & set(STAGES)) >= 2, seen
        assert {("read", "done"), ("write", "done")} <= seen, seen
        expect(page.get_by_test_id("survey-papers")).to_have_attribute("value", "1")
        expect(page.get_by_test_id("survey-cost")).to_have_text(re.compile(r"^\$\d+\.\d{4}$"))

        report = page.get_by_test_id("survey-report")
        expect(report).to_have_attribute("data-ready", "1", timeout=30_000)
        # The topic (markup included) is the report's heading, as text.
        expect(report.locator("h2").first).to_have_text(TOPIC)
        # Exactly that heading: the simulator writes section titles from the prompt's
        # words, so a section may well be titled "… research questions …" as well.
        questions = report.locator("h3", has_text=re.compile(r"^\s*Research questions\s*$"))
        expect(questions).to_have_count(1)
        citations = report.get_by_test_id("survey-citation")
        doc_id = survey_web.document["id"]
        # The simulator's auto-mode sentences are not built from the passage they
        # cite, so the model-independent checks may move every one of them to "Needs
        # checking" (listed, never linked); whatever stays cited links the PDF page.
        if citations.count() == 0:
            expect(report).to_contain_text("Needs checking")
            expect(report).to_contain_text("Citation checks")
        pdf_path = f"/v1/library/documents/{doc_id}/pdf"
        for link in citations.all():
            href = link.get_attribute("href") or ""
            assert href.startswith(pdf_path), href
            assert link.get_attribute("data-document-id") == doc_id
            pdf_path = href
        pdf = page.request.get(survey_web.url + pdf_path)
        assert pdf.status == 200 and pdf.body()[:5] == b"%PDF-"
        downloads = page.get_by_test_id("survey-artifact")
        names = set(downloads.all_inner_texts())
        assert {"report.md", "papers.json", "notes.json", "report.tex", "references.bib"} <= names
        md = page.request.get(survey_web.url + (downloads.first.get_attribute("href") or ""))
        assert md.status == 200
        assert page.evaluate("window.__xss") is None
        assert report.locator("script, img").count() == 0
        page.screenshot(path=str(screenshot_dir() / "survey_report.png"), full_page=True)

        # Its job page says what came out in words, each file a link, and numbers each
        # step once (the sections are written and verified in parallel).
        page.goto(f"{survey_web.url}/jobs/{job_id}")
        summary = page.get_by_test_id("survey-summary")
        expect(summary).to_contain_text("cited of 1 found")
        expect(page.get_by_test_id("job-result")).not_to_contain_text("sha256")
        files = page.get_by_test_id("survey-files").locator("a")
        assert "references.bib" in files.all_inner_texts()
        bib = page.request.get(survey_web.url + (files.first.get_attribute("href") or ""))
        assert bib.status == 200
        rows = page.get_by_test_id("step-row")
        expect(rows.first).to_be_visible()
        numbers = [r.locator("td").first.inner_text() for r in rows.all()]
        assert len(numbers) == len(set(numbers)) > len(STAGES), numbers

        # The list shows the survey, its topic as text, finished.
        page.goto(f"{survey_web.url}/surveys")
        row = page.locator(f"[data-testid=survey-row][data-job-id='{job_id}']")
        expect(row).to_have_attribute("data-status", "succeeded")
        expect(row.locator("a")).to_have_text(TOPIC)
        assert page.evaluate("window.__xss") is None

    def test_the_page_shows_why_there_is_no_estimate_and_why_a_survey_did_not_start(
        self, survey_web: SurveyWebStack, context: BrowserContext
    ) -> None:
        page = _form(context, survey_web)
        page.get_by_test_id("survey-topic").fill("graph neural networks")
        estimate = page.get_by_test_id("survey-estimate")
        expect(estimate).to_have_attribute("data-state", "ok")
        page.get_by_test_id("survey-year-from").fill("20x9")
        expect(estimate).to_have_attribute("data-state", "error")
        expect(page.get_by_test_id("estimate-error")).to_contain_text("years")
        page.get_by_test_id("survey-submit").click()
        expect(page.get_by_test_id("survey-error")).to_contain_text("Not started:")
        expect(page.get_by_test_id("survey-error")).to_contain_text("years")
        assert page.url.endswith("/surveys")
        # Fixed, the estimate comes back.
        page.get_by_test_id("survey-year-from").fill("2019")
        expect(estimate).to_have_attribute("data-state", "ok")

    def test_an_estimate_over_the_budget_says_so_before_anything_starts(
        self,
        survey_web: SurveyWebStack,
        context: BrowserContext,
        session_factory: sessionmaker[Session],
    ) -> None:
        newcomer = make_user(session_factory)  # an empty library, and a tiny budget
        with client_for(survey_web.url, make_user(session_factory, admin=True)) as admin:
            body = {"user_email": newcomer.email, "usd": 0.0001, "period": "total"}
            resp = admin.put("/v1/admin/budgets", json=body)
            assert resp.status_code == 200, resp.text
        page = login(context, survey_web.url, newcomer.key, next_path="/surveys")
        page.get_by_test_id("survey-topic").fill("control of <b>bold</b> systems")
        estimate = page.get_by_test_id("survey-estimate")
        expect(estimate).to_have_attribute("data-state", "over")
        expect(page.get_by_test_id("estimate-budget")).to_contain_text("Over your remaining budget")
        expect(page.get_by_test_id("estimate-budget-left")).to_have_text("$0.0001 left")
        expect(page.get_by_test_id("estimate-papers")).to_have_text("0")
        expect(estimate).to_contain_text("Your library has no ready papers")
        expect(page.locator("#survey-list-status")).to_have_text("No surveys yet.")

    def test_a_survey_page_for_a_job_that_is_not_yours_says_so(
        self, survey_web: SurveyWebStack, context: BrowserContext
    ) -> None:
        page = login(
            context,
            survey_web.url,
            survey_web.member.key,
            next_path="/surveys/00000000-0000-0000-0000-000000000000",
        )
        expect(page.get_by_test_id("not-found")).to_have_text("Survey not found")
        expect(page.get_by_test_id("survey-report")).to_have_count(0)
        again = page.goto(f"{survey_web.url}/surveys/00000000-0000-0000-0000-000000000000")
        assert again is not None and again.status == 404
        resp = page.goto(f"{survey_web.url}/surveys/not-a-uuid")
        assert resp is not None and resp.status == 422


class TestSurveyReport:
    def test_a_fabricated_citation_is_listed_under_needs_checking_not_linked(
        self, survey_web: SurveyWebStack, context: BrowserContext
    ) -> None:
        """Section 0 is scripted with one real and one fabricated citation; every other
        model call is the simulator's auto mode. The page is open while the survey runs."""
        (key,) = expected_keys([survey_web.document])
        with client_for(survey_web.url, survey_web.member) as client:
            session_id = str(client.post("/v1/sessions", json={"title": "s"}).json()["id"])
            paragraphs = [
                {"text": f"SciBERT helps on scientific tasks [@{key}].", "keys": [key]},
                {"text": f"{FABRICATED_CLAIM} [@{FABRICATED}].", "keys": []},
            ]
            scripts = {
                conversation(session_id, "write", "0"): {
                    "replies": [{"content": json.dumps({"paragraphs": paragraphs})}]
                },
                conversation(session_id, "verify", "0"): {
                    "replies": [{"content": json.dumps({"verdicts": {"c1": SUPPORTED}})}]
                },
            }
            for conv, script in scripts.items():
                survey_web.sim.set_script(conv, script)
            body = {
                "kind": "survey",
                "session_id": session_id,
                "input": {"topic": "scientific language models", "length": "short"},
            }
            resp = client.post("/v1/jobs", json=body)
            assert resp.status_code == 202, resp.text
            job_id = resp.json()["id"]
        page = login(context, survey_web.url, survey_web.member.key, f"/surveys/{job_id}")
        expect(page.get_by_test_id("survey-status")).to_have_text(
            "succeeded", timeout=SURVEY_TIMEOUT_MS
        )
        report = page.get_by_test_id("survey-report")
        expect(report).to_have_attribute("data-ready", "1", timeout=30_000)
        needs = report.get_by_test_id("survey-needs-checking")
        expect(needs).to_contain_text(FABRICATED_CLAIM)
        expect(needs).to_contain_text(FABRICATED)
        # Only resolvable keys become citation links; the fabricated one is nowhere linked.
        citations = report.get_by_test_id("survey-citation")
        expect(citations.first).to_be_visible()
        assert set(citations.evaluate_all("els => els.map(e => e.dataset.key)")) == {key}
        expect(report.locator(f"[data-key='{FABRICATED}']")).to_have_count(0)
        body_text = report.inner_text().partition("Needs checking")[0]
        assert "SciBERT helps on scientific tasks" in body_text
        assert FABRICATED_CLAIM not in body_text

    def test_the_report_renderer_builds_only_its_own_elements_from_hostile_markdown(
        self, survey_web: SurveyWebStack, context: BrowserContext
    ) -> None:
        page = login(context, survey_web.url, survey_web.member.key, next_path="/surveys")
        # The renderer the survey page loads, on a page of the same origin and CSP.
        for url in MARKDOWN_SCRIPTS:
            page.add_script_tag(url=url)
        rendered = page.evaluate(RENDER, HOSTILE_MARKDOWN)
        assert set(rendered["tags"]) <= {
            "H2",
            "H3",
            "P",
            "STRONG",
            "EM",
            "CODE",
            "A",
            "UL",
            "OL",
            "LI",
        }
        assert rendered["tags"].count("LI") == 4 and "OL" in rendered["tags"]
        assert rendered["keys"] == ["a1", "b2:x", "c3"]
        assert rendered["h2"] == "Title <img src=x onerror=window.__xss=1>"
        assert "<script>window.__xss=2</script>" in rendered["text"]
        assert "[not a cite]" in rendered["text"] and "continued" in rendered["text"]
        assert page.evaluate("window.__xss") is None
