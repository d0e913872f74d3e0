"""``POST/GET/DELETE /v1/webhooks``: where to tell about a job's end, signed.

A webhook without a project is about its owner's own jobs; with one, about
every top-level job of that project (its members may add one; its owners, its
creator or an admin may remove it). The secret signs each delivery (see
services/common/webhook_signature.py); it is given back only in the answer
that created it. Deliveries are listed with their attempts and last error, so
a receiver that is down is visible, not silent.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import or_, select

from services.api.access import key_scope, member_project, project_role
from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses, not_found
from services.common.contracts.errors import ServiceError
from services.common.models import (
    WEBHOOK_EVENTS,
    ProjectMember,
    User,
    Webhook,
    WebhookDelivery,
)
from services.common.net_addresses import AddressRefused, InvalidUrl
from services.common.net_guard import check_url

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"], responses=error_responses(401, 422))

MAX_WEBHOOKS_PER_USER = 20
MAX_URL = 2000


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=1,
        max_length=MAX_URL,
        description="http(s) URL to POST to",
    )
    secret: str | None = Field(
        default=None,
        min_length=16,
        max_length=200,
        description="signs each delivery; one is generated when omitted",
    )
    events: list[str] = Field(
        default_factory=lambda: list(WEBHOOK_EVENTS), min_length=1, max_length=10
    )
    project: str | None = Field(default=None, max_length=200)

    @field_validator("events")
    @classmethod
    def _known(cls, events: list[str]) -> list[str]:
        unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
        if unknown:
            raise ValueError(f"unknown events {unknown}; use any of {list(WEBHOOK_EVENTS)}")
        return sorted(set(events), key=WEBHOOK_EVENTS.index)


class WebhookView(BaseModel):
    id: uuid.UUID
    url: str
    events: list[str]
    project_id: uuid.UUID | None
    created_at: datetime
    delivered: int = 0
    pending: int = 0
    failed: int = 0
    last_error: str | None = None


class WebhookCreated(WebhookView):
    secret: str = Field(description="shown only now")


class WebhookList(BaseModel):
    items: list[WebhookView]


class DeliveryView(BaseModel):
    id: uuid.UUID
    job_id: uuid.UUID
    event: str
    status: str
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryList(BaseModel):
    items: list[DeliveryView]


def _check_url(url: str) -> str:
    url = url.strip()
    if not url.lower().startswith(("http://", "https://")):
        raise ServiceError(422, "invalid_url", "the webhook URL must be http:// or https://")
    try:
        check_url(url)
    except InvalidUrl as err:
        raise ServiceError(422, "invalid_url", f"not a usable URL: {err}") from None
    except AddressRefused as err:
        # The address itself is checked again at every delivery (net_guard).
        raise ServiceError(422, "address_refused", str(err)) from None
    return url


def _view(db: DbSession, hook: Webhook) -> WebhookView:
    rows = db.execute(
        select(WebhookDelivery.status, WebhookDelivery.last_error).where(
            WebhookDelivery.webhook_id == hook.id
        )
    ).all()
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("delivered", "pending", "failed")}
    errors = [r.last_error for r in rows if r.last_error]
    return WebhookView(
        id=hook.id,
        url=hook.url,
        events=list(hook.events),
        project_id=hook.project_id,
        created_at=hook.created_at,
        last_error=errors[-1] if errors else None,
        **counts,
    )


def _visible(db: DbSession, user: User) -> list[Webhook]:
    """The caller's own webhooks and those of projects they belong to (key scope kept)."""
    member_of = select(ProjectMember.project_id).where(ProjectMember.user_id == user.id)
    stmt = select(Webhook).where(or_(Webhook.user_id == user.id, Webhook.project_id.in_(member_of)))
    scope = key_scope(db)
    if scope is not None:
        stmt = stmt.where(Webhook.project_id == scope)
    return list(db.scalars(stmt.order_by(Webhook.created_at)))


def _owned(db: DbSession, user: User, webhook_id: uuid.UUID) -> Webhook:
    hook = db.get(Webhook, webhook_id)
    if hook is None or (not user.is_admin and hook not in _visible(db, user)):
        raise not_found("webhook")
    return hook


@router.post(
    "",
    status_code=201,
    response_model=WebhookCreated,
    responses=error_responses(403, 404, 409, 413),
)
def create_webhook(body: WebhookCreate, db: DbSession, user: CurrentUser) -> WebhookCreated:
    """Tell ``url`` when a job ends (signed with ``secret``; see the README)."""
    url = _check_url(body.url)
    project = member_project(db, user, body.project) if body.project else None
    scope = key_scope(db)
    if scope is not None and (project is None or project.id != scope):
        raise ServiceError(
            403, "forbidden", "a project-scoped key adds webhooks to its project only"
        )
    count = len(db.scalars(select(Webhook.id).where(Webhook.user_id == user.id)).all())
    if count >= MAX_WEBHOOKS_PER_USER:
        raise ServiceError(409, "too_many", f"at most {MAX_WEBHOOKS_PER_USER} webhooks per user")
    secret = body.secret or secrets.token_urlsafe(32)
    hook = Webhook(
        user_id=user.id,
        project_id=project.id if project else None,
        url=url,
        secret=secret,
        events=body.events,
    )
    db.add(hook)
    db.commit()
    db.refresh(hook)
    return WebhookCreated(**_view(db, hook).model_dump(), secret=secret)


@router.get("", response_model=WebhookList)
def list_webhooks(db: DbSession, user: CurrentUser) -> WebhookList:
    return WebhookList(items=[_view(db, hook) for hook in _visible(db, user)])


@router.get("/{webhook_id}/deliveries", response_model=DeliveryList, responses=error_responses(404))
def list_deliveries(webhook_id: uuid.UUID, db: DbSession, user: CurrentUser) -> DeliveryList:
    """The latest 100 deliveries, newest first."""
    hook = _owned(db, user, webhook_id)
    rows = db.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == hook.id)
        .order_by(WebhookDelivery.created_at.desc())
        .limit(100)
    )
    return DeliveryList(items=[DeliveryView.model_validate(r, from_attributes=True) for r in rows])


@router.delete("/{webhook_id}", status_code=204, responses=error_responses(403, 404))
def delete_webhook(webhook_id: uuid.UUID, db: DbSession, user: CurrentUser) -> Response:
    hook = _owned(db, user, webhook_id)
    if hook.user_id != user.id and not user.is_admin:
        role = (
            project_role(db, user_id=user.id, project_id=hook.project_id)
            if hook.project_id
            else None
        )
        if role != "owner":
            raise ServiceError(403, "forbidden", "only its creator, a project owner or an admin")
    db.delete(hook)
    db.commit()
    return Response(status_code=204)
