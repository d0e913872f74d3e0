"""A survey schedule's "what's new since last run", from the slot to the survey's gather:
the second run's job carries ``since`` (the first run's time), and the survey reading
that job row takes from the library only the papers added after it, while the first
run reads the whole library. Real Postgres; the schedule is fired with the API's own
``fire_one`` at a clock the test chooses."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.firing import fire_one
from services.api.settings import ApiSettings
from services.common.celery_app import build_celery
from services.common.contracts.collections import Collection
from services.common.models import Document, Job
from services.worker.survey.context import SurveyJob
from services.worker.survey.gather import _library_papers
from tests.api.schedule_builders import (
    make_schedule,
    no_schedules_left,  # noqa: F401 - autouse fixture
    runs_of,
    schedule_row,
)
from tests.fixtures.builders import make_user

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def fire(stack: object, isolated_redis_url: str) -> Iterator[Any]:
    settings = ApiSettings(redis_url=isolated_redis_url)
    celery = build_celery(settings)

    def run(factory: sessionmaker[Session], schedule_id: uuid.UUID, now: datetime) -> None:
        fired = fire_one(
            factory, settings=settings, celery=celery, schedule_id=schedule_id, now=now
        )
        assert fired is not None and fired.job_id is not None, fired

    yield run


def add_document(factory: sessionmaker[Session], owner: uuid.UUID, title: str, at: datetime) -> str:
    with factory() as db, db.begin():
        doc = Document(
            collection=Collection.personal(owner),
            owner_id=owner,
            content_hash=uuid.uuid4().hex * 2,
            filename=f"{title}.pdf",
            title=title,
            status="ready",
            created_at=at,
        )
        db.add(doc)
        db.flush()
        return str(doc.id)


def gathered_titles(factory: sessionmaker[Session], job: Job, found: dict[str, Any]) -> set[str]:
    """What the survey of ``job`` takes from the library hits ``found``: the job as the
    runner reads it (services/worker/survey/runner.py), through the gather's own query."""
    survey = SurveyJob(job.id, job.session_id, job.user_id, job.project_id, dict(job.input))
    ctx: Any = SimpleNamespace(deps=SimpleNamespace(factory=factory), job=survey)
    return {p["title"] for p in _library_papers(ctx, found)}


class TestWhatsNewReachesTheSurvey:
    def test_the_second_run_reads_only_papers_added_since_the_first(
        self, session_factory: sessionmaker[Session], fire: Any
    ) -> None:
        alice = make_user(session_factory)
        sid = make_schedule(
            session_factory,
            alice.id,
            cron="0 9 * * MON",
            job={"kind": "survey", "input": {"topic": "fern genomics"}},
        )
        first_slot = schedule_row(session_factory, sid).next_slot
        first_run = first_slot + timedelta(minutes=1)
        old = add_document(
            session_factory, alice.id, "Old fern paper", first_run - timedelta(days=30)
        )
        new = add_document(
            session_factory, alice.id, "New fern paper", first_run + timedelta(days=2)
        )
        found = {
            doc: {"score": 1.0, "chunks": {"p1": {"text": "ferns", "page": 1}}}
            for doc in (old, new)
        }

        fire(session_factory, sid, first_run)
        fire(session_factory, sid, first_slot + timedelta(days=7, minutes=2))
        one, two = runs_of(session_factory, sid)

        assert "since" not in one.input
        assert datetime.fromisoformat(two.input["since"]) == first_run
        assert gathered_titles(session_factory, one, found) == {"Old fern paper", "New fern paper"}
        assert gathered_titles(session_factory, two, found) == {"New fern paper"}
