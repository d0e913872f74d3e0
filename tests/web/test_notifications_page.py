"""The header's notifications in Chromium: a badge with the unread count that appears
while the page is open when a job ends, a list of them, "Mark all read", and the
notification settings form on the Jobs page.

Real simulator, API and agent worker (the module-wide ``running`` stack); each test has
its own user. The job's text carries markup: it must show as text and never run.
"""

from __future__ import annotations

from playwright.sync_api import BrowserContext, expect
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack
from tests.web.browser import login, screenshot_dir

MARKUP = "<img src=x onerror=window.__xss=1> ferns"


class TestNotificationBadge:
    def test_a_job_that_ends_while_the_page_is_open_shows_in_the_badge_and_list(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        page = login(context, running.url, user.key, next_path="/jobs")
        badge = page.get_by_test_id("notifications-count")
        expect(badge).to_be_hidden()
        with client_for(running.url, user) as client:
            session = client.post("/v1/sessions", json={"title": "n"}).json()["id"]
            running.sim.set_script(session, {"latency_ms": 10, "replies": [{"content": "done"}]})
            job_id = client.post(
                f"/v1/sessions/{session}/messages", json={"content": MARKUP}
            ).json()["job_id"]
            assert wait_job(client, job_id)["status"] == "succeeded"
        # No reload: the header polls.
        expect(badge).to_have_text("1")
        expect(badge).to_have_attribute("aria-label", "1 unread")
        page.get_by_test_id("notifications-toggle").click()
        item = page.get_by_test_id("notification")
        expect(item).to_have_count(1)
        expect(item).to_have_attribute("data-job-id", job_id)
        expect(item.locator("a")).to_have_text(f"turn succeeded: {MARKUP}")
        expect(item.locator("a")).to_have_attribute("href", f"/jobs/{job_id}")
        assert page.evaluate("window.__xss") is None
        page.screenshot(path=str(screenshot_dir() / "notifications.png"))
        page.get_by_test_id("notifications-read-all").click()
        expect(badge).to_be_hidden()
        with client_for(running.url, user) as client:
            assert client.get("/v1/notifications").json()["unread"] == 0
        page.reload()
        expect(page.get_by_test_id("notifications-count")).to_be_hidden()


class TestNotificationSettingsForm:
    def test_the_jobs_page_saves_the_viewers_settings(
        self, running: RunningStack, context: BrowserContext, session_factory: sessionmaker[Session]
    ) -> None:
        user = make_user(session_factory)
        page = login(context, running.url, user.key, next_path="/jobs")
        page.get_by_text("Notification settings").click()
        email = page.get_by_test_id("notify-email")
        expect(email).to_be_checked()
        email.uncheck()
        page.get_by_test_id("notify-event-job.failed").uncheck()
        page.get_by_test_id("notify-save").click()
        expect(page.get_by_test_id("notify-status")).to_have_text("Saved.")
        with client_for(running.url, user) as client:
            saved = client.get("/v1/notifications/settings").json()
        assert saved["email"] is False
        assert saved["events"] == ["job.succeeded", "job.waiting_approval", "job.budget_exhausted"]
        page.reload()
        page.get_by_text("Notification settings").click()
        expect(page.get_by_test_id("notify-email")).not_to_be_checked()
        expect(page.get_by_test_id("notify-event-job.failed")).not_to_be_checked()
        expect(page.get_by_test_id("notify-event-job.succeeded")).to_be_checked()
