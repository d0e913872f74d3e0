"""The worker's webhook dispatcher: a background thread that sends due deliveries.

Every agent worker runs one; claims skip rows another worker holds, so more
workers send more at once and none sends a row twice at the same time.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from services.worker.notify.delivery import deliver_due, guarded_client
from services.worker.notify.settings import WebhookSettings

log = logging.getLogger(__name__)


class WebhookDispatcher:
    def __init__(self, factory: sessionmaker[Session], settings: WebhookSettings) -> None:
        self._factory = factory
        self._settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="webhooks", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        with guarded_client(self._settings) as client:
            while not self._stop.wait(self._settings.webhook_poll_s):
                try:
                    deliver_due(self._factory, self._settings, client)
                except Exception:  # a DB blip: the rows stay due, try next period
                    log.exception("webhook dispatch failed")
