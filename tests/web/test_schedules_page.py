"""The Schedules page in Chromium: a survey schedule added through the form and listed
(cron, timezone, next run, "never" run), a bad cron refused with the API's reason,
a fired slot's job linked as the last run, an admin listing everyone's schedules and
pausing and resuming one, and the owner removing it. The topic carries markup: it
must show as text and never run.

Real API, worker and Postgres (the module-wide ``running`` stack); the slot is fired
with the API's own ``fire_one`` at a clock the test chooses.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from playwright.sync_api import BrowserContext, expect
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.firing import fire_one
from services.api.settings import ApiSettings
from services.common.celery_app import build_celery
from services.common.models import Schedule
from tests.api.schedule_builders import (
    no_schedules_left,  # noqa: F401 - autouse fixture
    runs_of,
    schedule_row,
)
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user
from tests.fixtures.processes import RunningStack
from tests.web.browser import login

TOPIC = "<img src=x onerror=window.__xss=1> fern genomics"


def fire_now(stack: Stack, factory: sessionmaker[Session], schedule_id: uuid.UUID) -> None:
    """Make the schedule's slot due and fire it, as the API's loop would."""
    row = schedule_row(factory, schedule_id)
    due = row.next_slot
    with factory() as db, db.begin():
        db.execute(
            update(Schedule).where(Schedule.id == row.id).values(next_slot=due - timedelta(days=8))
        )
    settings = ApiSettings(redis_url=stack.redis_url)
    fired = fire_one(
        factory,
        settings=settings,
        celery=build_celery(settings),
        schedule_id=row.id,
        now=due - timedelta(days=8) + timedelta(minutes=1),
    )
    assert fired is not None and fired.job_id is not None, fired


class TestSchedulesPage:
    def test_add_list_fire_pause_resume_and_remove(
        self,
        stack: Stack,
        running: RunningStack,
        context: BrowserContext,
        session_factory: sessionmaker[Session],
    ) -> None:
        alice = make_user(session_factory)
        admin = make_user(session_factory, admin=True)
        page = login(context, running.url, alice.key, next_path="/schedules")
        expect(page.locator("body[data-schedules-ready='1']")).to_have_count(1)
        expect(page.get_by_test_id("schedules-empty")).to_be_visible()

        page.get_by_test_id("schedule-cron").fill("* * * * *")
        page.get_by_test_id("schedule-text").fill(TOPIC)
        page.get_by_test_id("schedule-add").click()
        expect(page.get_by_test_id("schedules-error")).to_contain_text("the shortest interval")
        expect(page.get_by_test_id("schedule-row")).to_have_count(0)

        page.get_by_test_id("schedule-cron").fill("0 9 * * MON")
        page.get_by_test_id("schedule-tz").fill("Europe/Paris")
        page.get_by_test_id("schedule-add").click()
        row = page.get_by_test_id("schedule-row")
        expect(row).to_have_count(1)
        expect(page.get_by_test_id("schedules-error")).to_be_hidden()
        expect(row.get_by_test_id("schedule-cron")).to_have_text("0 9 * * MON")
        expect(row).to_contain_text("Europe/Paris")
        expect(row).to_contain_text(f"survey: {TOPIC}")
        expect(row.get_by_test_id("schedule-last")).to_have_text("never")
        expect(row.get_by_test_id("schedule-state")).to_have_text("active")
        shown_id = row.get_attribute("data-schedule-id")
        assert shown_id
        schedule_id = uuid.UUID(shown_id)
        stored = schedule_row(session_factory, schedule_id)
        assert stored.job["kind"] == "survey" and stored.job["input"]["topic"] == TOPIC
        next_text = stored.next_slot.strftime("%Y-%m-%d %H:%M UTC")
        expect(row.get_by_test_id("schedule-next")).to_have_text(next_text)

        fire_now(stack, session_factory, schedule_id)
        (run,) = runs_of(session_factory, schedule_id)
        page.reload()
        link = page.get_by_test_id("schedule-last-job")
        expect(link).to_have_attribute("href", f"/jobs/{run.id}")
        assert page.evaluate("window.__xss") is None

        # An admin sees everyone's schedules and pauses and resumes Alice's.
        other = context.browser.new_context() if context.browser else None
        assert other is not None
        try:
            boss = login(other, running.url, admin.key, next_path="/schedules")
            expect(boss.locator("body[data-schedules-ready='1']")).to_have_count(1)
            mine = boss.locator(f"[data-schedule-id='{schedule_id}']")
            expect(mine).to_have_count(0)
            boss.get_by_test_id("schedules-all").check()
            expect(mine).to_have_count(1)
            mine.get_by_test_id("schedule-pause").click()
            expect(mine.get_by_test_id("schedule-state")).to_have_text("paused")
            expect(mine.get_by_test_id("schedule-next")).to_have_text("paused")
            assert schedule_row(session_factory, schedule_id).paused
            mine.get_by_test_id("schedule-resume").click()
            expect(mine.get_by_test_id("schedule-state")).to_have_text("active")
            assert not schedule_row(session_factory, schedule_id).paused
        finally:
            other.close()

        page.reload()
        page.get_by_test_id("schedule-delete").click()
        expect(page.get_by_test_id("schedule-row")).to_have_count(0)
        expect(page.get_by_test_id("schedules-empty")).to_be_visible()
        with client_for(running.url, alice) as client:
            assert client.get(f"/v1/schedules/{schedule_id}").status_code == 404
