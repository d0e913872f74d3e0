"""Shapes of ``/v1/notifications``: the in-app list and the settings, user's or project's."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field, field_validator

from services.api.bodies import RequestBody
from services.common.notification_events import NOTIFY_EVENTS, PROJECT_RECIPIENTS

MAX_LISTED = 100
# As a Literal the schema names the events (an enum), so clients and checks know them.
NotifyEvent = Literal["job.succeeded", "job.failed", "job.waiting_approval", "job.budget_exhausted"]
assert set(get_args(NotifyEvent)) == set(NOTIFY_EVENTS)  # noqa: S101 - one list, checked at import


class NotificationView(BaseModel):
    id: uuid.UUID
    event: str
    job_id: uuid.UUID
    project_id: uuid.UUID | None
    kind: str
    title: str
    status: str
    cost_usd: float
    created_at: datetime
    read_at: datetime | None
    unread: bool


class NotificationList(BaseModel):
    items: list[NotificationView] = Field(description="unread first, then newest first")
    unread: int = Field(description="how many of the caller's notifications are unread")


class MarkRead(RequestBody):
    ids: list[uuid.UUID] = Field(default_factory=list, max_length=MAX_LISTED)
    all: bool = Field(default=False, description="mark every notification of the caller read")


class ReadResult(BaseModel):
    marked: int
    unread: int


class SettingsUpdate(RequestBody):
    """Fields left out keep their value."""

    email: bool | None = None
    events: list[NotifyEvent] | None = Field(default=None, max_length=len(NOTIFY_EVENTS))
    recipients: Literal["owners", "members"] | None = Field(
        default=None, description="a project's settings only: who of its members gets e-mail"
    )

    @field_validator("events")
    @classmethod
    def _in_order(cls, events: list[str] | None) -> list[str] | None:
        if events is None:
            return None
        return sorted(set(events), key=NOTIFY_EVENTS.index)


class SettingsView(BaseModel):
    scope: Literal["user", "project"]
    project_id: uuid.UUID | None
    email: bool
    events: list[str]
    recipients: str | None = Field(description="a project's: " + " | ".join(PROJECT_RECIPIENTS))
    may_change: bool
