"""Request and response bodies of the admin endpoints."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


class KeyCreate(RequestBody):
    name: str | None = Field(default=None, max_length=200)


class KeyCreated(BaseModel):
    id: uuid.UUID
    key: str
    prefix: str


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: uuid.UUID
    prefix: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


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
    role: Literal["admin", "member"] = "member"


class UserList(BaseModel):
    items: list[UserOut]


class KeyList(BaseModel):
    items: list[KeyOut]


class ProjectList(BaseModel):
    items: list[ProjectOut]


class MemberOut(BaseModel):
    project_id: uuid.UUID
    user_id: uuid.UUID
    role: str
