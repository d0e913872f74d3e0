"""Public library endpoints (/v1/library): authenticate the user, work out which
collections they may read, and proxy to the internal library service."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from sqlalchemy import select

from services.api.deps import CurrentUser, DbSession, StateDep
from services.api.errors import ApiError
from services.common.models import Project, ProjectMember

router = APIRouter(prefix="/v1/library", tags=["library"])
PROXY_TIMEOUT_S = 60.0


class LibraryAccess:
    """The caller's identity and readable collections, as headers for the library service."""

    def __init__(self, user_id: uuid.UUID, projects: dict[str, uuid.UUID], token: str) -> None:
        self.user_id = user_id
        self.projects = projects  # name and id (as text) -> project id
        self.collections = [f"user:{user_id}"] + sorted(
            {f"project:{pid}" for pid in projects.values()}
        )
        self.token = token

    def headers(self) -> dict[str, str]:
        return {
            "X-Leaflab-Internal": self.token,
            "X-Leaflab-User": str(self.user_id),
            "X-Leaflab-Collections": ",".join(self.collections),
        }

    def collection_for(self, project: str | None) -> str:
        if not project:
            return f"user:{self.user_id}"
        pid = self.projects.get(project)
        if pid is None:  # not a member looks the same as not existing
            raise ApiError(404, "not_found", f"project {project!r} not found")
        return f"project:{pid}"


def library_access(user: CurrentUser, db: DbSession, state: StateDep) -> LibraryAccess:
    rows = db.execute(
        select(Project.id, Project.name)
        .join(ProjectMember, ProjectMember.project_id == Project.id)
        .where(ProjectMember.user_id == user.id)
    ).all()
    projects: dict[str, uuid.UUID] = {}
    for pid, name in rows:
        projects[name] = pid
        projects[str(pid)] = pid
    return LibraryAccess(user.id, projects, state.settings.internal_token)


AccessDep = Annotated[LibraryAccess, Depends(library_access)]


async def _forward(state: Any, method: str, path: str, **kwargs: Any) -> JSONResponse:
    try:
        async with httpx.AsyncClient(
            base_url=state.settings.library_url, timeout=PROXY_TIMEOUT_S
        ) as client:
            resp = await client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise ApiError(503, "library_unavailable", f"library service unreachable: {exc}") from None
    try:
        body = resp.json()
    except ValueError:
        body = {"error": {"code": "library_error", "message": resp.text[:500]}}
    return JSONResponse(body, status_code=resp.status_code)


@router.post("/documents", status_code=202)
async def add_document(request: Request, access: AccessDep, state: StateDep) -> JSONResponse:
    """Multipart PDF (`file`, optional `project`) or JSON `{url, project?}` → 202."""
    cap = state.settings.max_request_bytes
    limit = max(cap, 50_000_000)
    if int(request.headers.get("content-length") or 0) > limit:
        raise ApiError(413, "too_large", f"upload larger than {limit} bytes")
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("multipart/form-data"):
        form = await request.form(max_files=1)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(400, "invalid_request", "multipart upload needs a 'file' part")
        project = form.get("project")
        collection = access.collection_for(project if isinstance(project, str) else None)
        data = await upload.read(limit + 1)
        files = {"file": (upload.filename or "upload.pdf", data, "application/pdf")}
        return await _forward(
            state,
            "POST",
            "/documents",
            headers=access.headers(),
            files=files,
            data={"collection": collection},
        )
    try:
        body = await request.json()
    except ValueError:
        raise ApiError(
            400, "invalid_request", "send a multipart PDF or JSON {url, project?}"
        ) from None
    if not isinstance(body, dict) or not isinstance(body.get("url"), str):
        raise ApiError(400, "invalid_request", 'JSON body must be {"url": ..., "project"?}')
    collection = access.collection_for(body.get("project"))
    return await _forward(
        state,
        "POST",
        "/documents",
        headers=access.headers(),
        json={"url": body["url"], "collection": collection},
    )


@router.get("/documents")
async def list_documents(access: AccessDep, state: StateDep) -> JSONResponse:
    return await _forward(state, "GET", "/documents", headers=access.headers())


@router.get("/documents/{document_id}")
async def get_document(document_id: str, access: AccessDep, state: StateDep) -> JSONResponse:
    return await _forward(state, "GET", f"/documents/{document_id}", headers=access.headers())


@router.get("/search")
async def search(
    access: AccessDep,
    state: StateDep,
    q: str,
    mode: str = "mix",
    k: int = 10,
    project: str | None = None,
) -> JSONResponse:
    """Search every collection the user may read, or only ``project``'s."""
    headers = access.headers()
    if project:
        headers["X-Leaflab-Collections"] = access.collection_for(project)
    return await _forward(
        state, "GET", "/search", headers=headers, params={"q": q, "mode": mode, "k": k}
    )
