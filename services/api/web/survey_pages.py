"""The Surveys pages: the form with its live cost estimate and the list of the viewer's
surveys (``/surveys``), and one survey's stages and finished report (``/surveys/{id}``).

Shells: static/surveys.js (form, list) and static/surveys.report.js (stages from the
job's event stream, the report rendered from its ``report.md`` artifact) call the JSON
API with the session cookie. Whether the viewer may see a survey is the API's decision.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.deps import DbSession
from services.api.web.not_found import may_see_job, not_found_page
from services.api.web.page_auth import PageViewer
from services.api.web.templating import render
from services.common.surveys import SHAPES, STAGES

router = APIRouter(include_in_schema=False)
LENGTHS = tuple(SHAPES)


@router.get("/surveys", response_class=HTMLResponse)
def surveys_page(request: Request, viewer: PageViewer) -> HTMLResponse:
    return render(request, "surveys.html", viewer, nav="surveys", lengths=LENGTHS)


@router.get("/surveys/{job_id}", response_class=HTMLResponse)
def survey_page(
    request: Request, job_id: uuid.UUID, viewer: PageViewer, db: DbSession
) -> HTMLResponse:
    if not may_see_job(db, viewer, job_id):
        return not_found_page(request, viewer, "survey", back="/surveys", back_label="surveys")
    return render(request, "survey.html", viewer, nav="surveys", job_id=str(job_id), stages=STAGES)
