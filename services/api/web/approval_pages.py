"""The Approvals page: the viewer's pending approvals with their diffs and the decisions.

A shell; static/approvals.js finds the jobs waiting for approval
(``GET /v1/jobs?status=waiting_approval``), reads each one's approvals and posts
the decision with the session's CSRF token. ``?job=<id>`` narrows the page to
one job (the link a job's owner follows from its page or a notification).
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/approvals", response_class=HTMLResponse)
def approvals_page(
    request: Request, viewer: PageViewer, job: uuid.UUID | None = Query(None)
) -> HTMLResponse:
    # A malformed ?job= is a 422 from FastAPI, never echoed into the page.
    return render(
        request, "approvals.html", viewer, nav="approvals", job_filter=str(job) if job else ""
    )
