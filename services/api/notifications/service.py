"""Reading and changing notification settings; the in-app list's query.

A user without a settings row hears of every event, in the app and by e-mail;
a project without one e-mails nobody (its members still hear of their own
jobs). The outbox trigger (migration ``email_notifications``) reads the same
rows with the same defaults, so what the API shows is what is sent.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.api.access import key_scope, member_or_personal
from services.api.notifications.schemas import SettingsUpdate, SettingsView
from services.common.models import NOTIFY_EVENTS, Notification, NotificationSettings, User


def settings_row(
    db: Session, *, user_id: uuid.UUID | None, project_id: uuid.UUID | None
) -> NotificationSettings | None:
    stmt = select(NotificationSettings)
    if project_id is None:
        stmt = stmt.where(
            NotificationSettings.user_id == user_id, NotificationSettings.project_id.is_(None)
        )
    else:
        stmt = stmt.where(
            NotificationSettings.project_id == project_id, NotificationSettings.user_id.is_(None)
        )
    found: NotificationSettings | None = db.scalar(stmt)
    return found


def view(
    row: NotificationSettings | None, *, project_id: uuid.UUID | None, may_change: bool
) -> SettingsView:
    if project_id is None:
        return SettingsView(
            scope="user",
            project_id=None,
            email=row.email if row else True,
            events=list(row.events) if row else list(NOTIFY_EVENTS),
            recipients=None,
            may_change=may_change,
        )
    return SettingsView(
        scope="project",
        project_id=project_id,
        email=row.email if row else False,
        events=list(row.events) if row else list(NOTIFY_EVENTS),
        recipients=row.recipients if row else "owners",
        may_change=may_change,
    )


def update_settings(
    db: Session, *, user: User, project_id: uuid.UUID | None, body: SettingsUpdate
) -> NotificationSettings:
    """Upsert the user's (no project) or the project's settings; flushes, the route commits."""
    owner = {"user_id": None, "project_id": project_id} if project_id else {"user_id": user.id}
    row = settings_row(db, user_id=user.id, project_id=project_id)
    if row is None:
        current = view(None, project_id=project_id, may_change=True)
        row = NotificationSettings(
            **owner,
            email=current.email,
            events=current.events,
            recipients=current.recipients or "owners",
        )
        db.add(row)
    if body.email is not None:
        row.email = body.email
    if body.events is not None:
        row.events = list(body.events)
    if body.recipients is not None and project_id is not None:
        row.recipients = body.recipients
    row.updated_at = func.now()
    db.flush()
    db.refresh(row)
    return row


def visible_notifications(db: Session, user: User) -> list[Any]:
    """Conditions for the caller's own notifications, as lists of jobs are filtered:
    projects they are a member of now, within the key's scope."""
    conditions: list[Any] = [
        Notification.user_id == user.id,
        member_or_personal(user, Notification.project_id),
    ]
    scope = key_scope(db)
    if scope is not None:
        conditions.append(Notification.project_id == scope)
    return conditions


def unread_count(db: Session, user: User) -> int:
    return int(
        db.scalar(
            select(func.count())
            .select_from(Notification)
            .where(*visible_notifications(db, user), Notification.read_at.is_(None))
        )
        or 0
    )
