"""``POST /v1/admin/users/{user_id}/invites``: an invite link for a user (admins only)."""

from __future__ import annotations

import uuid
from datetime import datetime

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from services.api.deps import AdminUser, DbSession
from services.api.errors import error_responses, not_found
from services.api.invites.service import create_invite
from services.common.models import User

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(401, 403, 422))

MAX_HOURS = 24 * 30


class InviteCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expires_hours: int = Field(default=72, ge=1, le=MAX_HOURS)


class InviteCreated(BaseModel):
    url: str = Field(description="The one-time link; shown only now")
    path: str
    expires_at: datetime
    user_id: uuid.UUID
    email: str


@router.post(
    "/users/{user_id}/invites",
    status_code=201,
    response_model=InviteCreated,
    responses=error_responses(404, 413),
)
def invite_user(
    user_id: uuid.UUID, body: InviteCreate, request: Request, db: DbSession, admin: AdminUser
) -> InviteCreated:
    """A one-time link that lets the user make their own first API key and sign in."""
    user = db.get(User, user_id)
    if user is None or user.disabled:
        raise not_found("user")
    invite, token = create_invite(db, user=user, created_by=admin.id, hours=body.expires_hours)
    path = f"/invite/{token}"
    return InviteCreated(
        url=str(request.base_url).rstrip("/") + path,
        path=path,
        expires_at=invite.expires_at,
        user_id=user.id,
        email=user.email,
    )
