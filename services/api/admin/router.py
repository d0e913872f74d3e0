"""Admin endpoints: users, their API keys, projects and membership."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from services.api.admin import service
from services.api.admin.budgets.router import router as budgets_router
from services.api.admin.mcp_servers.router import router as mcp_servers_router
from services.api.admin.models.router import router as models_router
from services.api.admin.ops.router import router as ops_router
from services.api.admin.schemas import (
    KeyCreate,
    KeyCreated,
    KeyList,
    KeyOut,
    MemberAdd,
    MemberList,
    MemberOut,
    ProjectCreate,
    ProjectList,
    ProjectOut,
    UserCreate,
    UserList,
    UserOut,
)
from services.api.deps import AdminUser, DbSession, StateDep
from services.api.errors import error_responses, not_found
from services.common.contracts.errors import ServiceError
from services.common.models import ApiKey, Project, User
from services.common.workspace_usage import MB, all_users_bytes

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(401, 403, 422))


@router.post("/users", status_code=201, response_model=UserOut, responses=error_responses(409, 413))
def create_user(body: UserCreate, db: DbSession, _: AdminUser) -> User:
    if service.find_user(db, email=body.email) is not None:
        raise ServiceError(409, "conflict", f"user {body.email} already exists")
    return service.create_user(db, email=body.email, is_admin=body.is_admin)


@router.get("/users", response_model=UserList)
def list_users(db: DbSession, _: AdminUser, state: StateDep) -> UserList:
    """Every user, with the disk their session workspaces use against the caps."""
    users = db.scalars(select(User).order_by(User.created_at))
    disk = all_users_bytes(db, state.settings.workspaces_dir)
    return UserList(
        items=[
            UserOut.model_validate(u).model_copy(update={"disk_bytes": disk.get(u.id, 0)})
            for u in users
        ],
        user_disk_cap_bytes=state.settings.sandbox_user_disk_max_mb * MB,
        workspace_cap_bytes=state.settings.sandbox_workspace_max_mb * MB,
    )


@router.post(
    "/users/{user_id}/keys",
    status_code=201,
    response_model=KeyCreated,
    responses=error_responses(404, 413),
)
def create_key(
    user_id: uuid.UUID, db: DbSession, _: AdminUser, body: KeyCreate | None = None
) -> KeyCreated:
    """A new key, returned once here and never again (listings show its prefix)."""
    user = db.get(User, user_id)
    if user is None:
        raise not_found("user")
    body = body or KeyCreate()
    project = None
    if body.project is not None:
        project = service.find_project(db, ref=body.project)
        if project is None:
            raise not_found("project")
    try:
        row, key = service.create_api_key(
            db, user=user, name=body.name, project=project, expires_at=body.expires_at
        )
    except service.NotAMember as refused:
        raise ServiceError(422, "invalid_request", str(refused)) from None
    return KeyCreated(
        id=row.id, key=key, prefix=row.prefix, project_id=row.project_id, expires_at=row.expires_at
    )


@router.get("/users/{user_id}/keys", response_model=KeyList)
def list_keys(user_id: uuid.UUID, db: DbSession, _: AdminUser) -> KeyList:
    rows = db.scalars(select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at))
    return KeyList(items=[KeyOut.model_validate(r) for r in rows])


@router.delete("/users/{user_id}/keys/{key_id}", status_code=204, responses=error_responses(404))
def revoke_key(user_id: uuid.UUID, key_id: uuid.UUID, db: DbSession, _: AdminUser) -> None:
    if not service.revoke_api_key(db, user_id=user_id, key_id=key_id):
        raise not_found("key")


@router.post(
    "/projects", status_code=201, response_model=ProjectOut, responses=error_responses(409, 413)
)
def create_project(body: ProjectCreate, db: DbSession, admin: AdminUser) -> Project:
    """The creating admin becomes the project's first owner: the project is usable
    at once (uploads, sessions, memory) instead of refusing its own creator."""
    if db.scalar(select(Project).where(Project.name == body.name.strip())) is not None:
        raise ServiceError(409, "conflict", f"project {body.name} already exists")
    try:
        project = service.create_project(db, name=body.name, allow_network=body.allow_network)
    except IntegrityError:
        raise ServiceError(409, "conflict", f"project {body.name} already exists") from None
    service.add_member(db, project=project, user=admin, role="owner")
    return project


@router.get("/projects", response_model=ProjectList)
def list_projects(db: DbSession, _: AdminUser) -> ProjectList:
    rows = db.scalars(select(Project).order_by(Project.name))
    return ProjectList(items=[ProjectOut.model_validate(p) for p in rows])


@router.post(
    "/projects/{project_id}/members",
    status_code=201,
    response_model=MemberOut,
    responses=error_responses(404, 413),
)
def add_member(project_id: uuid.UUID, body: MemberAdd, db: DbSession, _: AdminUser) -> MemberOut:
    project = db.get(Project, project_id)
    if project is None:
        raise not_found("project")
    user = service.find_user(db, email=body.email)
    if user is None:
        raise not_found("user")
    member = service.add_member(db, project=project, user=user, role=body.role)
    return MemberOut(project_id=project.id, user_id=user.id, email=user.email, role=member.role)


@router.get(
    "/projects/{project_id}/members", response_model=MemberList, responses=error_responses(404)
)
def list_members(project_id: uuid.UUID, db: DbSession, _: AdminUser) -> MemberList:
    project = db.get(Project, project_id)
    if project is None:
        raise not_found("project")
    return MemberList(
        items=[
            MemberOut(project_id=project.id, user_id=u.id, email=u.email, role=m.role)
            for m, u in service.project_members(db, project=project)
        ]
    )


@router.delete(
    "/projects/{project_id}/members/{user_id}", status_code=204, responses=error_responses(404)
)
def remove_member(project_id: uuid.UUID, user_id: uuid.UUID, db: DbSession, _: AdminUser) -> None:
    """Remove a member; their keys scoped to this project are revoked with it."""
    project = db.get(Project, project_id)
    if project is None or not service.remove_member(db, project=project, user_id=user_id):
        raise not_found("member")


# Budgets and spend live in their own module; mounted under /v1/admin.
router.include_router(budgets_router)
router.include_router(ops_router)
router.include_router(models_router)
router.include_router(mcp_servers_router)
