"""The jobs list and the job page in Chromium: facts, steps, the trace waterfall with span
attributes, the Jaeger link, the job tree, cancelling a running job, and filters."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack, running_stack
from tests.web.browser import login, screenshot_dir

JAEGER = "http://jaeger.lab.example:16686"
TOOL_SCRIPT = {
    "latency_ms": 10,
    "replies": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "x\n"}}]},
        {"content": "Wrote a.md."},
    ],
}
# Each model call takes 1.5 s, so the job is still running when the page cancels it.
SLOW_SCRIPT = {
    "latency_ms": 1500,
    "replies": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": f"{i}.md", "content": "x"}}]}
        for i in range(20)
    ]
    + [{"content": "never reached"}],
}


@pytest.fixture(scope="module")
def running(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """The usual stack, with a Jaeger UI configured so job pages link their traces."""
    env = {"LEAFLAB_JAEGER_UI_URL": JAEGER + "/"}
    with running_stack(stack, tmp_path_factory.mktemp("running-jobs"), env=env) as running:
        yield running


@pytest.fixture(scope="module")
def member(session_factory: sessionmaker[Session]) -> TestUser:
    return make_user(session_factory)


def _turn(running: RunningStack, client: httpx.Client, script: dict, text: str) -> str:
    session = client.post("/v1/sessions", json={"title": text}).json()
    running.sim.set_script(session["id"], script)
    resp = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": text})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["job_id"])


def _job_page(context: BrowserContext, running: RunningStack, user: TestUser, job_id: str) -> Page:
    return login(context, running.url, user.key, next_path=f"/jobs/{job_id}")


class TestJobPage:
    def test_a_finished_turn_shows_steps_and_its_trace_waterfall(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        with client_for(running.url, member) as client:
            job_id = _turn(running, client, TOOL_SCRIPT, "write a file")
            job = wait_job(client, job_id)
        assert job["status"] == "succeeded", job
        page = _job_page(context, running, member, job_id)
        expect(page.get_by_test_id("job-status")).to_have_text("succeeded")
        expect(page.get_by_test_id("job-result")).to_have_text("Wrote a.md.")
        expect(page.get_by_test_id("step-row")).to_have_count(3)  # llm, write_file, llm
        expect(page.get_by_test_id("job-cancel")).to_be_hidden()

        waterfall = page.get_by_test_id("trace-waterfall")
        expect(waterfall).to_be_visible()
        # Spans reach Postgres in batches: the page polls for them after the job ends.
        tool_span = waterfall.locator("[data-testid=span-row]", has_text="execute_tool write_file")
        expect(tool_span).to_have_count(1, timeout=30_000)
        expect(waterfall.locator("[data-testid=span-row]", has_text="job")).not_to_have_count(0)
        # Nesting: the tool span sits deeper than the root, on the same time axis.
        root_pad = (
            waterfall.get_by_test_id("span-row")
            .first.locator(".wf-label")
            .evaluate("e => parseFloat(e.style.paddingLeft)")
        )
        tool_pad = tool_span.locator(".wf-label").evaluate("e => parseFloat(e.style.paddingLeft)")
        assert tool_pad > root_pad
        tool_span.click()
        details = page.get_by_test_id("span-attributes")
        expect(details.get_by_test_id("span-name")).to_have_text("execute_tool write_file")
        expect(details.locator("[data-testid=span-attribute]")).not_to_have_count(0)
        expect(details).to_contain_text("gen_ai.tool.name")
        link = page.get_by_test_id("jaeger-link")
        expect(link).to_have_attribute("href", f"{JAEGER}/trace/{job['trace_id']}")
        page.screenshot(path=str(screenshot_dir() / "job.png"), full_page=True)

    def test_a_turns_answer_shows_as_markdown_and_hostile_markup_as_text(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        answer = (
            "**Done**: two files.\n\n| file | lines |\n|---|---|\n| a.md | 3 |\n\n"
            "Area $\\pi r^2$. <img src=x onerror=window.__xss=1>"
        )
        with client_for(running.url, member) as client:
            job_id = _turn(running, client, {"replies": [{"content": answer}]}, "markdown")
            assert wait_job(client, job_id)["status"] == "succeeded"
        page = _job_page(context, running, member, job_id)
        result = page.get_by_test_id("job-result")
        expect(result.locator("strong")).to_have_text("Done")
        expect(result.locator("table td")).to_have_text(["a.md", "3"])
        expect(result.locator(".katex")).to_have_count(1)
        expect(result).to_contain_text("<img src=x onerror=window.__xss=1>")
        assert result.locator("img").count() == 0
        assert page.evaluate("window.__xss") is None

    def test_cancel_a_running_job_from_its_page(
        self, running: RunningStack, context: BrowserContext, member: TestUser
    ) -> None:
        with client_for(running.url, member) as client:
            job_id = _turn(running, client, SLOW_SCRIPT, "a slow one")
            wait_job(client, job_id, statuses=("running",))
            page = _job_page(context, running, member, job_id)
            expect(page.get_by_test_id("job-status")).to_have_text("running")
            page.get_by_test_id("job-cancel").click()
            expect(page.get_by_test_id("job-status")).to_have_text("cancelled", timeout=30_000)
            expect(page.get_by_test_id("job-cancel")).to_be_hidden()
            assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        # The list filters by status: only the cancelled job shows.
        page.goto(f"{running.url}/jobs")
        page.select_option("#filter-status", "cancelled")
        page.get_by_role("button", name="Filter").click()
        rows = page.get_by_test_id("job-row")
        expect(rows).to_have_count(1)
        expect(rows).to_have_attribute("data-job-id", job_id)
        assert "status=cancelled" in page.url

    def test_an_admin_filters_the_list_by_user_and_a_member_cannot(
        self,
        running: RunningStack,
        context: BrowserContext,
        browser: Browser,
        member: TestUser,
        session_factory: sessionmaker[Session],
    ) -> None:
        other = make_user(session_factory)
        with client_for(running.url, other) as client:
            theirs = _turn(running, client, {"replies": [{"content": "ok"}]}, "theirs")
            wait_job(client, theirs)
        admin = make_user(session_factory, admin=True)
        page = login(context, running.url, admin.key, next_path="/jobs")
        page.get_by_test_id("filter-user").fill(other.email)
        page.get_by_role("button", name="Filter").click()
        rows = page.get_by_test_id("job-row")
        expect(rows).to_have_count(1)
        expect(rows).to_have_attribute("data-job-id", theirs)
        # A member has no such filter, and asking the API for it is refused.
        members = browser.new_context()
        try:
            member_page = login(members, running.url, member.key, "/jobs")
            expect(member_page.get_by_test_id("filter-user")).to_have_count(0)
            member_page.goto(f"{running.url}/jobs?user={other.email}")
            expect(member_page.locator("#jobs-error")).to_contain_text("only admins")
            expect(member_page.get_by_test_id("job-row")).to_have_count(0)
        finally:
            members.close()

    def test_a_batch_page_lists_its_children_and_a_stranger_sees_nothing(
        self,
        running: RunningStack,
        context: BrowserContext,
        member: TestUser,
        session_factory: sessionmaker[Session],
    ) -> None:
        with client_for(running.url, member) as client:
            body = {"kind": "batch", "input": {"tasks": [{"content": "one"}, {"content": "two"}]}}
            batch_id = client.post("/v1/jobs", json=body).json()["id"]
            wait_job(client, batch_id)
        page = _job_page(context, running, member, batch_id)
        children = page.get_by_test_id("job-child")
        expect(children).to_have_count(2)
        children.first.locator("a").click()
        expect(page.get_by_test_id("job-parent")).to_have_attribute("href", f"/jobs/{batch_id}")

        stranger = context.browser.new_context() if context.browser else None
        assert stranger is not None
        try:
            other = _job_page(stranger, running, make_user(session_factory), batch_id)
            # Another user's job is a 404 page (the JSON API's rule), not an empty shell.
            expect(other.get_by_test_id("not-found")).to_have_text("Job not found")
            expect(other.get_by_test_id("job-facts")).to_have_count(0)
            again = other.goto(f"{running.url}/jobs/{batch_id}")
            assert again is not None and again.status == 404
            resp = other.goto(f"{running.url}/jobs/not-a-uuid")
            assert resp is not None and resp.status == 422
        finally:
            stranger.close()
