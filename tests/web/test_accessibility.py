"""Every page passes axe-core's WCAG 2 A/AA rules (labels, names, contrast, landmarks)
and can be worked from the keyboard.

axe-core is the engine browsers' own accessibility tools use; its script comes
bundled in the `axe-playwright-python` package (nothing is fetched at run time) and
runs inside the real page, after the page's own scripts have filled it in.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import TestUser, client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack
from tests.web.browser import login

AXE = resources.files("axe_playwright_python").joinpath("axe.min.js").read_text("utf-8")
# Impacts that block a user; "minor"/"moderate" findings are printed, not failed on.
BLOCKING = {"serious", "critical"}
PAGES = ["/", "/jobs", "/library", "/approvals", "/surveys", "/schedules", "/admin"]


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.0/2.1 A and AA findings for the page as it is now."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated over the DevTools protocol: the page's CSP (no inline scripts) stays on.
        page.evaluate(AXE)
    result: dict[str, Any] = page.evaluate(
        """() => axe.run(document, {runOnly: {type: 'tag',
             values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})"""
    )
    return list(result["violations"])


def _blocking(violations: list[dict[str, Any]]) -> list[str]:
    found = []
    for v in violations:
        if v["impact"] in BLOCKING:
            targets = [str(n["target"]) for n in v["nodes"][:3]]
            found.append(f"{v['id']} ({v['impact']}): {v['help']} at {targets}")
        else:
            print(f"axe {v['impact']}: {v['id']} {v['help']}")
    return found


@pytest.fixture(scope="module")
def admin(session_factory: sessionmaker[Session]) -> TestUser:
    return make_user(session_factory, admin=True)


@pytest.fixture(scope="module")
def finished_job(running: RunningStack, admin: TestUser) -> tuple[str, str]:
    """A job with a tool call, so the job page has steps and a trace to show."""
    with client_for(running.url, admin) as client:
        session = client.post("/v1/sessions", json={"title": "a11y"}).json()
        running.sim.set_script(
            session["id"],
            {
                "latency_ms": 10,
                "replies": [
                    {"tool_calls": [{"name": "todo", "arguments": {"items": []}}]},
                    {"content": "Readable answer."},
                ],
            },
        )
        job = client.post(f"/v1/sessions/{session['id']}/messages", json={"content": "hi"}).json()
        assert wait_job(client, job["job_id"])["status"] == "succeeded"
        return f"/?session={session['id']}", f"/jobs/{job['job_id']}"


class TestAxe:
    def test_the_login_page_has_no_blocking_findings(
        self, running: RunningStack, context: BrowserContext
    ) -> None:
        page = context.new_page()
        page.goto(f"{running.url}/login")
        assert _blocking(axe_violations(page)) == []

    @pytest.mark.parametrize("path", PAGES)
    def test_each_page_has_no_blocking_findings(
        self, running: RunningStack, context: BrowserContext, admin: TestUser, path: str
    ) -> None:
        page = login(context, running.url, admin.key, next_path=path)
        page.wait_for_load_state("networkidle")
        assert _blocking(axe_violations(page)) == []

    def test_a_chat_with_an_answer_and_its_job_page_have_no_blocking_findings(
        self,
        running: RunningStack,
        context: BrowserContext,
        admin: TestUser,
        finished_job: tuple[str, str],
    ) -> None:
        chat, job = finished_job
        page = login(context, running.url, admin.key, next_path=chat)
        expect(page.get_by_test_id("message-assistant").last).to_contain_text("Readable answer.")
        assert _blocking(axe_violations(page)) == []
        page.goto(f"{running.url}{job}")
        expect(page.get_by_test_id("trace-waterfall")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert _blocking(axe_violations(page)) == []


def _tab_to(page: Page, testid: str, *, presses: int) -> bool:
    """Presses Tab until the element with ``testid`` has the focus (False if it never does)."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement?.dataset?.testid") == testid:
            return True
    return False


class TestKeyboard:
    def test_a_message_can_be_written_and_sent_without_a_mouse(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        member = make_user(session_factory)
        with client_for(running.url, member) as client:
            session = client.post("/v1/sessions", json={"title": "keys"}).json()
        running.sim.set_script(
            session["id"], {"latency_ms": 10, "replies": [{"content": "Sent by keyboard."}]}
        )
        page = login(context, running.url, member.key, next_path=f"/?session={session['id']}")
        assert _tab_to(page, "chat-input", presses=60), "the chat input cannot be reached with Tab"
        page.keyboard.type("hello")
        assert _tab_to(page, "chat-send", presses=8), "the send button cannot be reached with Tab"
        page.keyboard.press("Enter")
        expect(page.get_by_test_id("message-assistant").last).to_contain_text("Sent by keyboard.")
