"""Sending the outbox: claim due deliveries, POST them signed, record what happened.

At least once, never lost: a delivery is claimed by moving its
``next_attempt_at`` past the request's timeout in one committed statement
(``FOR UPDATE SKIP LOCKED``: two workers never claim the same row), so a worker
that dies mid-request leaves it due again once that time passes. Only a 2xx
answer marks it delivered. Any other answer, a refused address or a network
error schedules the next attempt with exponential backoff; after the last
attempt it is marked failed (and stays listed with its last error).
Redirects are not followed: a receiver that moved must be edited, not chased.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import autocommit
from services.common.net_guard import AddressRefused, GuardedTransport, NetGuard, parse_allow_list
from services.common.webhook_signature import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    signature,
)
from services.worker.notify.settings import WebhookSettings

log = logging.getLogger(__name__)

CLAIM_SQL = text(
    """
    UPDATE webhook_deliveries d
       SET attempts = d.attempts + 1,
           next_attempt_at = now() + make_interval(secs => :hold)
      FROM webhooks w
     WHERE d.id IN (SELECT id FROM webhook_deliveries
                     WHERE status = 'pending' AND next_attempt_at <= now()
                     ORDER BY next_attempt_at LIMIT :limit
                     FOR UPDATE SKIP LOCKED)
       AND w.id = d.webhook_id
    RETURNING d.id, d.event, d.body, d.attempts, w.url, w.secret
    """
)
DELIVERED_SQL = text(
    "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), "
    "last_status = :code, last_error = NULL WHERE id = :id"
)
RETRY_SQL = text(
    "UPDATE webhook_deliveries SET last_status = :code, last_error = :error, "
    "status = CASE WHEN attempts >= :max THEN 'failed' ELSE 'pending' END, "
    "next_attempt_at = now() + make_interval(secs => :wait) WHERE id = :id"
)


@dataclass(frozen=True)
class Claimed:
    id: uuid.UUID
    event: str
    body: dict[str, Any]
    attempts: int
    url: str
    secret: str


def claim_due(
    factory: sessionmaker[Session], settings: WebhookSettings, *, limit: int = 20
) -> list[Claimed]:
    # Held for longer than one request can take, so no other worker re-sends it
    # while this one is still waiting for the receiver.
    hold = settings.webhook_timeout_s * 3 + 5
    with autocommit(factory) as db:
        rows = db.execute(CLAIM_SQL, {"hold": hold, "limit": limit}).all()
    return [Claimed(r.id, r.event, dict(r.body), int(r.attempts), r.url, r.secret) for r in rows]


def backoff_s(attempts: int, settings: WebhookSettings) -> float:
    return float(
        min(settings.webhook_backoff_max_s, settings.webhook_backoff_base_s * 2 ** (attempts - 1))
    )


def send(client: httpx.Client, item: Claimed) -> tuple[int | None, str | None]:
    """(status code, error): a 2xx with no error is delivered."""
    body = json.dumps({"id": str(item.id), **item.body}, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Leaflab-Webhooks/1",
        SIGNATURE_HEADER: signature(item.secret, body),
        DELIVERY_HEADER: str(item.id),
        EVENT_HEADER: item.event,
    }
    try:
        resp = client.post(item.url, content=body, headers=headers)
    except AddressRefused as err:
        return None, f"address refused: {err}"
    except httpx.HTTPError as err:
        return None, f"{type(err).__name__}: {err}"[:500]
    if 200 <= resp.status_code < 300:
        return resp.status_code, None
    return resp.status_code, f"the receiver answered {resp.status_code}"


def deliver_due(
    factory: sessionmaker[Session], settings: WebhookSettings, client: httpx.Client
) -> int:
    """One pass: send every due delivery once; returns how many were delivered."""
    delivered = 0
    for item in claim_due(factory, settings):
        code, error = send(client, item)
        with autocommit(factory) as db:
            if error is None:
                db.execute(DELIVERED_SQL, {"id": item.id, "code": code})
                delivered += 1
            else:
                log.info(
                    "webhook delivery %s failed (attempt %d): %s", item.id, item.attempts, error
                )
                params = {
                    "id": item.id,
                    "code": code,
                    "error": error,
                    "max": settings.webhook_max_attempts,
                    "wait": backoff_s(item.attempts, settings),
                }
                db.execute(RETRY_SQL, params)
    return delivered


def guarded_client(settings: WebhookSettings) -> httpx.Client:
    """Deliveries go through the outbound guard: a webhook URL is user-chosen."""
    guard = NetGuard(parse_allow_list(settings.webhook_allow))
    return httpx.Client(
        transport=GuardedTransport(guard),
        timeout=settings.webhook_timeout_s,
        follow_redirects=False,
    )
