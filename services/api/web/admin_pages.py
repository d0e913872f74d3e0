"""The admin dashboard (admins with an unscoped key only; everyone else gets 403).

The page is a shell: its script reads everything from ``/v1/admin/*`` with the
session cookie, so the page itself never carries a key or any other secret.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import AdminViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, viewer: AdminViewer) -> HTMLResponse:
    return render(request, "admin.html", viewer, nav="admin")
