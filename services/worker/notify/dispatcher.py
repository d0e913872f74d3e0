"""The worker's notification dispatchers: background threads that send due deliveries.

Every agent worker runs one for webhooks and one for e-mail (apart, so a slow
SMTP server never delays a webhook); claims skip rows another worker holds, so
more workers send more at once and none sends a row twice at the same time.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from services.worker.notify.delivery import deliver_due, guarded_client
from services.worker.notify.email_delivery import send_due, skip_due
from services.worker.notify.settings import EmailSettings, WebhookSettings

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


class EmailDispatcher:
    """Sends due e-mails over SMTP; without ``LEAFLAB_SMTP_HOST`` it says once that
    e-mail is off and marks due e-mails skipped."""

    def __init__(self, factory: sessionmaker[Session], settings: EmailSettings) -> None:
        self._factory = factory
        self._settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="email", daemon=True)

    def start(self) -> None:
        if self._settings.smtp_host:
            log.info(
                "e-mail notifications via %s:%d",
                self._settings.smtp_host,
                self._settings.smtp_port,
            )
        else:
            log.info("e-mail notifications are off: LEAFLAB_SMTP_HOST is not set")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self._settings.smtp_poll_s):
            try:
                if self._settings.smtp_host:
                    send_due(self._factory, self._settings)
                else:
                    skip_due(self._factory)
            except Exception:  # a DB blip: the rows stay due, try next period
                log.exception("e-mail dispatch failed")
