"""Shapes of ``/v1/notifications``: the in-app list and the settings, user's or project's."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from services.api.bodies import RequestBody
from services.common.notification_events import NOTIFY_EVENTS, PROJECT_RECIPIENTS

MAX_LISTED = 100


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
    events: list[str] | None = Field(default=None, max_length=len(NOTIFY_EVENTS))
    recipients: Literal["owners", "members"] | None = Field(
        default=None, description="a project's settings only: who of its members gets e-mail"
    )

    @field_validator("events")
    @classmethod
    def _known(cls, events: list[str] | None) -> list[str] | None:
        if events is None:
            return None
        unknown = sorted(set(events) - set(NOTIFY_EVENTS))
        if unknown:
            raise ValueError(f"unknown events {unknown}; use any of {list(NOTIFY_EVENTS)}")
        return sorted(set(events), key=NOTIFY_EVENTS.index)


class SettingsView(BaseModel):
    scope: Literal["user", "project"]
    project_id: uuid.UUID | None
    email: bool
    events: list[str]
    recipients: str | None = Field(description="a project's: " + " | ".join(PROJECT_RECIPIENTS))
    may_change: bool
