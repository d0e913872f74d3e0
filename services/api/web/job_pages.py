"""The jobs list and the job page (live progress, cancel, tree, steps, trace waterfall).

Shells only: static/jobs.js and static/job.js read the JSON API with the session
cookie. The Jaeger link is the one piece of server configuration a page needs.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.deps import DbSession, StateDep
from services.api.web.not_found import may_see_job, not_found_page
from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request, viewer: PageViewer) -> HTMLResponse:
    return render(request, "jobs.html", viewer, nav="jobs")


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request, job_id: uuid.UUID, viewer: PageViewer, state: StateDep, db: DbSession
) -> HTMLResponse:
    # The same rule as the JSON API (404 there): a job the caller may not see is a
    # 404 page, not an empty shell whose scripts then say "job not found".
    if not may_see_job(db, viewer, job_id):
        return not_found_page(request, viewer, "job", back="/jobs", back_label="jobs")
    jaeger = (state.settings.jaeger_ui_url or "").rstrip("/")
    return render(request, "job.html", viewer, nav="jobs", job_id=str(job_id), jaeger_url=jaeger)
