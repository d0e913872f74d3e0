"""Request and response bodies of the admin endpoints."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from services.api.bodies import RequestBody

EMAIL_PATTERN = r"^[^@\s\x00]{1,64}@[^@\s\x00]{1,255}$"


class UserCreate(RequestBody):
    email: str = Field(pattern=EMAIL_PATTERN, max_length=320)
    is_admin: bool = False


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    email: str
    is_admin: bool
    disabled: bool
    created_at: datetime
    disk_bytes: int = Field(
        default=0, description="Size of the files in all of this user's session workspaces"
    )


class KeyCreate(RequestBody):
    name: str | None = Field(default=None, max_length=200)
    project: str | None = Field(
        default=None,
        max_length=200,
        description="limit the key to this project (name or id); the user must be a member",
    )
    expires_at: AwareDatetime | None = Field(default=None, description="the key stops working then")


class KeyCreated(BaseModel):
    """The only response that ever contains the key itself."""

    id: uuid.UUID
    key: str
    prefix: str
    project_id: uuid.UUID | None = None
    expires_at: datetime | None = None


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    prefix: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None
    expires_at: datetime | None
    project_id: uuid.UUID | None


class ProjectCreate(RequestBody):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[\w .\-]+$")
    allow_network: bool = False


class ProjectOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    name: str
    allow_network: bool
    created_at: datetime


class MemberAdd(RequestBody):
    email: str = Field(pattern=EMAIL_PATTERN, max_length=320)
    role: Literal["owner", "member"] = "member"


class UserList(BaseModel):
    items: list[UserOut]
    user_disk_cap_bytes: int = Field(
        default=0, description="The most one user's workspaces may hold (all sessions together)"
    )
    workspace_cap_bytes: int = Field(default=0, description="The most one workspace may hold")


class KeyList(BaseModel):
    items: list[KeyOut]


class ProjectList(BaseModel):
    items: list[ProjectOut]


class MemberOut(BaseModel):
    project_id: uuid.UUID
    user_id: uuid.UUID
    email: str
    role: str


class MemberList(BaseModel):
    items: list[MemberOut]
