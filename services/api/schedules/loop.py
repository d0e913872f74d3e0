"""The firing loop: a thread in every API process that runs due schedule slots.

Every API process runs one (started in the app's lifespan); the claim in
``firing`` makes them safe together, so more processes only mean a slot is
seen sooner. It runs in the API because a run is a submission: it goes
through the API's own submission path (services/api/jobs/submission.py),
which the worker may not import.
"""

from __future__ import annotations

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.firing import Clock, fire_due, utc_now
from services.api.settings import ApiSettings
from services.common.periodic import Periodic


class ScheduleLoop:
    def __init__(
        self,
        factory: sessionmaker[Session],
        *,
        settings: ApiSettings,
        celery: Celery,
        clock: Clock = utc_now,
    ) -> None:
        self._factory = factory
        self._settings = settings
        self._celery = celery
        self._clock = clock
        # Every API process runs it: a due slot's row lock lets one of them fire it.
        # A database blip leaves the slots due for the next period.
        self._loop = Periodic(
            "schedules", settings.schedule_poll_s, self._tick, failure="schedule firing failed"
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        fire_due(self._factory, settings=self._settings, celery=self._celery, now=self._clock())
