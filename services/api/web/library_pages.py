"""The Library page: uploads, live ingestion status, search, links into the PDFs.

A shell; its script calls ``/v1/library/*`` (and the PDF route) with the session cookie.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/library", response_class=HTMLResponse)
def library_page(request: Request, viewer: PageViewer) -> HTMLResponse:
    return render(request, "library.html", viewer, nav="library")
