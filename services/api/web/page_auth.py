"""Who is looking at a page: the browser session's caller, or a redirect to /login."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from services.api.api_keys import CALLER_INFO, Caller, KeyRefused, authenticate_key_id
from services.api.deps import DbSession, StateDep
from services.api.web.cookie_auth import session_of
from services.api.web.session_store import WebSession


class LoginRequired(Exception):
    """No valid browser session: the page answers with a redirect to /login."""


class PageForbidden(Exception):
    """Logged in, but this page is not for this user (403)."""


@dataclass(frozen=True)
class Viewer:
    caller: Caller
    session: WebSession

    @property
    def is_admin(self) -> bool:
        return self.caller.user.is_admin and self.caller.project_id is None


def page_viewer(request: Request, db: DbSession, state: StateDep) -> Viewer:
    found = session_of(request, state)
    if found is None:
        raise LoginRequired
    try:
        caller = authenticate_key_id(db, key_id=found[1].key_id)
    except KeyRefused:
        raise LoginRequired from None
    db.info[CALLER_INFO] = caller
    return Viewer(caller=caller, session=found[1])


PageViewer = Annotated[Viewer, Depends(page_viewer)]


def admin_viewer(viewer: PageViewer) -> Viewer:
    if not viewer.is_admin:
        raise PageForbidden
    return viewer


AdminViewer = Annotated[Viewer, Depends(admin_viewer)]


def install_page_handlers(app: FastAPI) -> None:
    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, _: LoginRequired) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)

    @app.exception_handler(PageForbidden)
    async def forbidden(_: Request, __: PageForbidden) -> Response:
        body = (
            "<!doctype html><title>Forbidden</title><h1>403 — admins only</h1><a href='/'>Back</a>"
        )
        return HTMLResponse(body, status_code=403)
