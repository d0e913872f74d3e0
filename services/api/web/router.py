"""Mounts the web pages and their static assets on the API app."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from services.api.web import (
    admin_pages,
    approval_pages,
    chat_pages,
    invite_pages,
    job_pages,
    library_pages,
    login,
    schedule_pages,
    survey_pages,
)
from services.api.web.oidc import pages as oidc_pages
from services.api.web.page_auth import install_page_handlers
from services.api.web.security_headers import WebSecurityHeaders
from services.api.web.templating import STATIC_DIR

PAGE_ROUTERS = (
    login.router,
    oidc_pages.router,
    invite_pages.router,
    chat_pages.router,
    job_pages.router,
    library_pages.router,
    survey_pages.router,
    schedule_pages.router,
    approval_pages.router,
    admin_pages.router,
)


def mount_web(app: FastAPI) -> None:
    for router in PAGE_ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_api_route("/favicon.ico", _favicon, include_in_schema=False)
    install_page_handlers(app)
    app.add_middleware(WebSecurityHeaders)


async def _favicon() -> FileResponse:
    """Browsers ask for /favicon.ico whatever the page links: the same leaf, not a 404."""
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")
