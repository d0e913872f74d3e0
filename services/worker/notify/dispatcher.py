"""The worker's notification dispatchers: background threads that send due deliveries.

Every agent worker runs one for webhooks and one for e-mail (apart, so a slow
SMTP server never delays a webhook); claims skip rows another worker holds, so
more workers send more at once and none sends a row twice at the same time.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session, sessionmaker

from services.common.periodic import Periodic
from services.worker.notify.delivery import deliver_due, guarded_client
from services.worker.notify.email_delivery import send_due, skip_due
from services.worker.notify.settings import EmailSettings, WebhookSettings

log = logging.getLogger(__name__)


class WebhookDispatcher:
    def __init__(self, factory: sessionmaker[Session], settings: WebhookSettings) -> None:
        self._factory = factory
        self._settings = settings
        self._client = guarded_client(settings)
        # Every worker sends (no cluster lock): claims skip rows another worker holds.
        # A DB blip leaves the rows due for the next period.
        self._loop = Periodic(
            "webhooks",
            settings.webhook_poll_s,
            self._tick,
            failure="webhook dispatch failed",
            join_s=0,
            on_exit=self._client.close,
        )

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        deliver_due(self._factory, self._settings, self._client)


class EmailDispatcher:
    """Sends due e-mails over SMTP; without ``LEAFLAB_SMTP_HOST`` it says once that
    e-mail is off and marks due e-mails skipped."""

    def __init__(self, factory: sessionmaker[Session], settings: EmailSettings) -> None:
        self._factory = factory
        self._settings = settings
        # As for webhooks: every worker sends, claims keep a row to one of them.
        self._loop = Periodic(
            "email", settings.smtp_poll_s, self._tick, failure="e-mail dispatch failed", join_s=0
        )

    def start(self) -> None:
        if self._settings.smtp_host:
            log.info(
                "e-mail notifications via %s:%d",
                self._settings.smtp_host,
                self._settings.smtp_port,
            )
        else:
            log.info("e-mail notifications are off: LEAFLAB_SMTP_HOST is not set")
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _tick(self) -> None:
        if self._settings.smtp_host:
            send_due(self._factory, self._settings)
        else:
            skip_due(self._factory)
