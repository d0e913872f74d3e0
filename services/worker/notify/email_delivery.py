"""Sending the e-mail outbox over SMTP: claim due deliveries, send, record what happened.

At least once, never lost — the webhooks' discipline (delivery.py): a delivery
is claimed by moving its ``next_attempt_at`` past what one send may take, in
one committed statement (``FOR UPDATE SKIP LOCKED``), so a worker that dies
mid-send leaves it due again. Only the server's acceptance of the message
marks it sent; a refused connection, a timeout or a temporary (4xx) answer
schedules the next attempt with exponential backoff, and after the last one
(or a permanent 5xx refusal of the recipient) it is marked failed with the
error. A resend carries the same Message-ID (email_message.py).
Without an SMTP host e-mail is off: due deliveries are marked skipped, so
turning it on later does not flood anyone with old news.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import autocommit
from services.worker.notify.email_message import compose
from services.worker.notify.settings import EmailSettings

log = logging.getLogger(__name__)

CLAIM_SQL = text(
    """
    UPDATE email_deliveries
       SET attempts = attempts + 1,
           next_attempt_at = now() + make_interval(secs => :hold)
     WHERE id IN (SELECT id FROM email_deliveries
                   WHERE status = 'pending' AND next_attempt_at <= now()
                   ORDER BY next_attempt_at LIMIT :limit
                   FOR UPDATE SKIP LOCKED)
    RETURNING id, job_id, to_address, body, attempts
    """
)
SENT_SQL = text(
    "UPDATE email_deliveries SET status = 'sent', sent_at = now(), last_error = NULL WHERE id = :id"
)
RETRY_SQL = text(
    "UPDATE email_deliveries SET last_error = :error, "
    "status = CASE WHEN :permanent OR attempts >= :max THEN 'failed' ELSE 'pending' END, "
    "next_attempt_at = now() + make_interval(secs => :wait) WHERE id = :id"
)
SKIP_SQL = text(
    "UPDATE email_deliveries SET status = 'skipped', "
    "last_error = 'e-mail is off: LEAFLAB_SMTP_HOST is not set' "
    "WHERE status = 'pending' AND next_attempt_at <= now()"
)


@dataclass(frozen=True)
class ClaimedEmail:
    id: uuid.UUID
    job_id: uuid.UUID
    to_address: str
    body: dict[str, Any]
    attempts: int


@dataclass(frozen=True)
class SendResult:
    error: str | None = None
    permanent: bool = False  # the server refused this recipient for good (5xx)


def claim_due(
    factory: sessionmaker[Session], settings: EmailSettings, *, limit: int = 20
) -> list[ClaimedEmail]:
    # Held for longer than a send can take (connect, STARTTLS, login, DATA).
    hold = settings.smtp_timeout_s * 4 + 5
    with autocommit(factory) as db:
        rows = db.execute(CLAIM_SQL, {"hold": hold, "limit": limit}).all()
    return [ClaimedEmail(r.id, r.job_id, r.to_address, dict(r.body), int(r.attempts)) for r in rows]


def backoff_s(attempts: int, settings: EmailSettings) -> float:
    return float(
        min(settings.smtp_backoff_max_s, settings.smtp_backoff_base_s * 2 ** (attempts - 1))
    )


def open_smtp(settings: EmailSettings) -> smtplib.SMTP:
    assert settings.smtp_host is not None  # noqa: S101 - callers check e-mail is on
    smtp = smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout_s)
    try:
        if settings.smtp_starttls:
            cafile = str(settings.smtp_ca_file) if settings.smtp_ca_file else None
            smtp.starttls(context=ssl.create_default_context(cafile=cafile))
        if settings.smtp_user:
            password = settings.smtp_password.get_secret_value() if settings.smtp_password else ""
            smtp.login(settings.smtp_user, password)
    except BaseException:
        smtp.close()
        raise
    return smtp


def send_one(smtp: smtplib.SMTP, item: ClaimedEmail, settings: EmailSettings) -> SendResult:
    msg = compose(
        delivery_id=item.id,
        job_id=item.job_id,
        to_address=item.to_address,
        snapshot=item.body,
        sender=settings.smtp_from,
        public_url=settings.public_url,
    )
    try:
        smtp.send_message(msg, from_addr=settings.smtp_from, to_addrs=[item.to_address])
    except smtplib.SMTPRecipientsRefused as err:
        codes = [code for code, _ in err.recipients.values()]
        return SendResult(f"recipient refused: {codes}", permanent=all(c >= 500 for c in codes))
    except smtplib.SMTPResponseException as err:
        return SendResult(f"SMTP {err.smtp_code}: {err.smtp_error!r}"[:500])
    return SendResult()


def _record(
    factory: sessionmaker[Session], settings: EmailSettings, item: ClaimedEmail, result: SendResult
) -> None:
    with autocommit(factory) as db:
        if result.error is None:
            db.execute(SENT_SQL, {"id": item.id})
            return
        log.info("e-mail %s not sent (attempt %d): %s", item.id, item.attempts, result.error)
        params = {
            "id": item.id,
            "error": result.error,
            "permanent": result.permanent,
            "max": settings.smtp_max_attempts,
            "wait": backoff_s(item.attempts, settings),
        }
        db.execute(RETRY_SQL, params)


def send_due(factory: sessionmaker[Session], settings: EmailSettings) -> int:
    """One pass: send every due e-mail once over one connection; returns how many were sent."""
    items = claim_due(factory, settings)
    if not items:
        return 0
    sent = 0
    try:
        smtp = open_smtp(settings)
    except (OSError, smtplib.SMTPException) as err:
        # The server is down or refused us: every claimed e-mail waits for the next try.
        failure = SendResult(f"{type(err).__name__}: {err}"[:500])
        for item in items:
            _record(factory, settings, item, failure)
        return 0
    with smtp:
        for item in items:
            try:
                result = send_one(smtp, item, settings)
            except (OSError, smtplib.SMTPException) as err:
                result = SendResult(f"{type(err).__name__}: {err}"[:500])
            _record(factory, settings, item, result)
            sent += result.error is None
    return sent


def skip_due(factory: sessionmaker[Session]) -> int:
    """E-mail is off: mark due deliveries skipped (they are not sent later)."""
    with autocommit(factory) as db:
        return int(db.execute(SKIP_SQL).rowcount)  # type: ignore[attr-defined]
