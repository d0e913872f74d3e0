"""The admin dashboard (admins with an unscoped key only; everyone else gets 403)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import AdminViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, viewer: AdminViewer) -> HTMLResponse:
    return render(request, "placeholder.html", viewer, nav="admin", heading="Admin")
