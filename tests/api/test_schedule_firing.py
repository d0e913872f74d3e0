"""Firing schedules against real Postgres, with the clock in the test's hands.

What the owner sees: each slot one job linked to its schedule; after downtime
the latest missed slot once; two firing loops racing on the same slots still
one job each; a paused schedule nothing; a slot refused for budget no job and
the reason on the schedule; a survey's next run asks only for what is new.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.firing import fire_due
from services.api.settings import ApiSettings
from services.common.celery_app import build_celery
from services.common.models import Budget, Job, Schedule
from tests.api.schedule_builders import (
    FUTURE,
    make_schedule,
    no_schedules_left,  # noqa: F401 - autouse fixture
    runs_of,
    schedule_row,
)
from tests.fixtures.builders import make_user

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def fire(stack: object, isolated_redis_url: str) -> Iterator[object]:
    settings = ApiSettings(redis_url=isolated_redis_url)
    celery = build_celery(settings)

    def run(factory: sessionmaker[Session], now: object) -> list[object]:
        return list(fire_due(factory, settings=settings, celery=celery, now=now))  # type: ignore[arg-type]

    yield run


NINE = FUTURE.replace(hour=9, minute=0) + timedelta(days=1)  # the first slot after FUTURE


class TestSlots:
    def test_a_due_slot_makes_one_job_linked_to_it_and_the_next_slot_moves_on(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(session_factory, alice.id)
        assert schedule_row(session_factory, sid).next_slot == NINE
        assert fire(session_factory, NINE - timedelta(seconds=1)) == []  # type: ignore[operator]
        assert runs_of(session_factory, sid) == []
        (fired,) = fire(session_factory, NINE + timedelta(seconds=3))  # type: ignore[operator]
        (job,) = runs_of(session_factory, sid)
        assert fired.job_id == job.id and fired.refused is None
        assert (job.kind, job.status, job.user_id, job.schedule_slot) == (
            "turn",
            "queued",
            alice.id,
            NINE,
        )
        assert job.input == {"content": "what is new?"}
        row = schedule_row(session_factory, sid)
        assert (row.last_slot, row.next_slot, row.last_error) == (
            NINE,
            NINE + timedelta(days=1),
            None,
        )
        # Polled again at the same moment: nothing more.
        assert fire(session_factory, NINE + timedelta(seconds=4)) == []  # type: ignore[operator]
        assert len(runs_of(session_factory, sid)) == 1

    def test_after_downtime_only_the_latest_missed_slot_runs_once(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(session_factory, alice.id, cron="0 9 * * *", timezone="Europe/Paris")
        first = schedule_row(session_factory, sid).next_slot
        back = first + timedelta(days=5, hours=3)  # five slots missed while all was down
        fire(session_factory, back)  # type: ignore[operator]
        fire(session_factory, back + timedelta(seconds=30))  # type: ignore[operator]
        (job,) = runs_of(session_factory, sid)
        assert job.schedule_slot == first + timedelta(days=5)  # 09:00 Paris, the latest
        row = schedule_row(session_factory, sid)
        assert row.next_slot == first + timedelta(days=6)
        assert row.next_slot > back

    def test_a_paused_schedule_does_not_fire_and_a_resumed_one_does(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(session_factory, alice.id)
        with session_factory() as db, db.begin():
            db.execute(update(Schedule).where(Schedule.id == sid).values(paused=True))
        assert fire(session_factory, NINE + timedelta(hours=1)) == []  # type: ignore[operator]
        assert runs_of(session_factory, sid) == []
        with session_factory() as db, db.begin():
            db.execute(update(Schedule).where(Schedule.id == sid).values(paused=False))
        fire(session_factory, NINE + timedelta(hours=1))  # type: ignore[operator]
        assert [j.schedule_slot for j in runs_of(session_factory, sid)] == [NINE]


class TestExactlyOnce:
    def test_two_firing_loops_racing_on_the_same_slots_make_one_job_each(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        ids = [make_schedule(session_factory, alice.id) for _ in range(20)]
        now = NINE + timedelta(seconds=1)
        start = threading.Barrier(4)
        errors: list[BaseException] = []

        def loop() -> None:
            try:
                start.wait()
                fire(session_factory, now)  # type: ignore[operator]
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=loop) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        for sid in ids:
            assert [j.schedule_slot for j in runs_of(session_factory, sid)] == [NINE]
            row = schedule_row(session_factory, sid)
            assert (row.last_error, row.next_slot) == (None, NINE + timedelta(days=1))

    def test_a_slot_can_never_hold_a_second_job(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(session_factory, alice.id)
        fire(session_factory, NINE)  # type: ignore[operator]
        (job,) = runs_of(session_factory, sid)
        with pytest.raises(IntegrityError), session_factory() as db, db.begin():
            db.execute(
                insert(Job).values(
                    id=__import__("uuid").uuid4(),
                    user_id=alice.id,
                    kind="turn",
                    status="queued",
                    input={},
                    max_turns=1,
                    schedule_id=sid,
                    schedule_slot=job.schedule_slot,
                )
            )


class TestRefusals:
    def test_a_slot_refused_for_budget_makes_no_job_and_says_why_on_the_schedule(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice, bob = make_user(session_factory), make_user(session_factory)
        broke = make_schedule(session_factory, alice.id)
        fine = make_schedule(session_factory, bob.id)
        with session_factory() as db, db.begin():
            db.add(
                Budget(
                    scope="user",
                    user_id=alice.id,
                    usd_limit=Decimal("1"),
                    period="total",
                    spent_usd=Decimal("1"),
                )
            )
        fire(session_factory, NINE)  # type: ignore[operator]
        assert runs_of(session_factory, broke) == []
        row = schedule_row(session_factory, broke)
        assert row.last_error is not None and "budget exhausted" in row.last_error
        assert row.next_slot == NINE + timedelta(days=1)  # the loop moved on
        assert len(runs_of(session_factory, fine)) == 1  # and the others still ran
        with session_factory() as db, db.begin():
            db.execute(update(Budget).where(Budget.user_id == alice.id).values(usd_limit=5))
        fire(session_factory, NINE + timedelta(days=1))  # type: ignore[operator]
        assert len(runs_of(session_factory, broke)) == 1
        assert schedule_row(session_factory, broke).last_error is None


class TestWhatsNew:
    def test_a_surveys_next_run_asks_only_for_papers_added_since_the_previous_run(
        self, session_factory: sessionmaker[Session], fire: object
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(
            session_factory,
            alice.id,
            cron="0 9 * * MON",
            job={"kind": "survey", "input": {"topic": "graph neural networks"}},
        )
        first = schedule_row(session_factory, sid).next_slot
        fire(session_factory, first + timedelta(minutes=1))  # type: ignore[operator]
        fire(session_factory, first + timedelta(days=7, minutes=2))  # type: ignore[operator]
        one, two = runs_of(session_factory, sid)
        assert "since" not in one.input  # the first run: the whole library
        assert datetime.fromisoformat(two.input["since"]) == first + timedelta(minutes=1)
