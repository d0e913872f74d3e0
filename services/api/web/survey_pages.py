"""The Surveys page(s)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/surveys", response_class=HTMLResponse)
def surveys_page(request: Request, viewer: PageViewer) -> HTMLResponse:
    return render(request, "placeholder.html", viewer, nav="surveys", heading="Surveys")
