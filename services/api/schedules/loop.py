"""The firing loop: a thread in every API process that runs due schedule slots.

Every API process runs one (started in the app's lifespan); the claim in
``firing`` makes them safe together, so more processes only mean a slot is
seen sooner. It runs in the API because a run is a submission: it goes
through the API's own submission path (services/api/jobs/submission.py),
which the worker may not import.
"""

from __future__ import annotations

import logging
import threading

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from services.api.schedules.firing import Clock, fire_due, utc_now
from services.api.settings import ApiSettings

log = logging.getLogger(__name__)


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
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="schedules", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._settings.schedule_poll_s):
            try:
                fire_due(
                    self._factory,
                    settings=self._settings,
                    celery=self._celery,
                    now=self._clock(),
                )
            except Exception:  # a database blip: the slots stay due, try next period
                log.exception("schedule firing failed")
