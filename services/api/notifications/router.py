"""``/v1/notifications``: the caller's in-app notifications and notification settings.

- ``GET /v1/notifications``: the caller's own (never anyone else's), unread first,
  with the unread count the web UI's badge shows.
- ``POST /v1/notifications/read``: mark some (``ids``) or ``all`` read (neither: none).
- ``GET/PUT /v1/notifications/settings``: the caller's own settings (their jobs:
  which events, e-mail on/off); with ``?project=`` a project's (e-mail to its
  owners or members): members read them, project owners and admins change them,
  anyone else gets 404 as for any project they cannot see.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import func, select, update

from services.api.access import key_scope, member_project, project_role
from services.api.deps import CurrentUser, DbSession
from services.api.errors import error_responses
from services.api.notifications.schemas import (
    MAX_LISTED,
    MarkRead,
    NotificationList,
    NotificationView,
    ReadResult,
    SettingsUpdate,
    SettingsView,
)
from services.api.notifications.service import (
    settings_row,
    unread_count,
    update_settings,
    view,
    visible_notifications,
)
from services.common.contracts.errors import ServiceError
from services.common.models import Notification, User

router = APIRouter(
    prefix="/v1/notifications", tags=["notifications"], responses=error_responses(401, 422)
)

ProjectQuery = Annotated[
    str | None, Query(max_length=200, description="a project's settings (name or id)")
]


def _item(row: Notification) -> NotificationView:
    body = row.body
    return NotificationView(
        id=row.id,
        event=row.event,
        job_id=row.job_id,
        project_id=row.project_id,
        kind=str(body.get("kind", "")),
        title=str(body.get("title", "")),
        status=str(body.get("status", "")),
        cost_usd=float(body.get("cost_usd") or 0),
        created_at=row.created_at,
        read_at=row.read_at,
        unread=row.read_at is None,
    )


@router.get("", response_model=NotificationList)
def list_notifications(
    db: DbSession,
    user: CurrentUser,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED)] = 50,
) -> NotificationList:
    """The caller's notifications, unread first, then newest first."""
    rows = db.scalars(
        select(Notification)
        .where(*visible_notifications(db, user))
        .order_by(Notification.read_at.is_not(None), Notification.created_at.desc())
        .limit(limit)
    )
    return NotificationList(items=[_item(r) for r in rows], unread=unread_count(db, user))


@router.post("/read", response_model=ReadResult, responses=error_responses(413))
def mark_read(body: MarkRead, db: DbSession, user: CurrentUser) -> ReadResult:
    if not body.ids and not body.all:
        return ReadResult(marked=0, unread=unread_count(db, user))
    stmt = (
        update(Notification)
        .where(*visible_notifications(db, user), Notification.read_at.is_(None))
        .values(read_at=func.now())
        .execution_options(synchronize_session=False)
    )
    if not body.all:
        stmt = stmt.where(Notification.id.in_(body.ids))
    marked = db.execute(stmt).rowcount  # type: ignore[attr-defined]
    db.commit()
    return ReadResult(marked=int(marked), unread=unread_count(db, user))


def _may_change_project(db: DbSession, user: User, project_id: uuid.UUID) -> bool:
    if user.is_admin:
        return True
    return project_role(db, user_id=user.id, project_id=project_id) == "owner"


@router.get("/settings", response_model=SettingsView, responses=error_responses(404))
def get_settings(db: DbSession, user: CurrentUser, project: ProjectQuery = None) -> SettingsView:
    if project:
        found = member_project(db, user, project)
        row = settings_row(db, user_id=None, project_id=found.id)
        return view(row, project_id=found.id, may_change=_may_change_project(db, user, found.id))
    row = settings_row(db, user_id=user.id, project_id=None)
    return view(row, project_id=None, may_change=key_scope(db) is None)


@router.put("/settings", response_model=SettingsView, responses=error_responses(403, 404, 413))
def put_settings(
    body: SettingsUpdate, db: DbSession, user: CurrentUser, project: ProjectQuery = None
) -> SettingsView:
    """Change the fields given; the others keep their value (``recipients`` is a
    project's only: without ``?project=`` it is ignored and answered as null)."""
    if project:
        found = member_project(db, user, project)
        if not _may_change_project(db, user, found.id):
            raise ServiceError(403, "forbidden", "only a project owner or an admin changes these")
        row = update_settings(db, user=user, project_id=found.id, body=body)
        db.commit()
        return view(row, project_id=found.id, may_change=True)
    if key_scope(db) is not None:
        raise ServiceError(403, "forbidden", "a project-scoped key cannot change your own settings")
    row = update_settings(db, user=user, project_id=None, body=body)
    db.commit()
    return view(row, project_id=None, may_change=True)
