"""The Schedules page: the viewer's schedules (cron, timezone, next and last run, the
last run's job linked), a form to add one (a survey topic or a turn prompt), remove,
pause and resume; admins may list everyone's.

A shell; static/schedules.js calls ``/v1/schedules`` with the session cookie, so the
API's rules (who may read, pause or remove a schedule) are the page's rules.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/schedules", response_class=HTMLResponse)
def schedules_page(request: Request, viewer: PageViewer) -> HTMLResponse:
    # The script shows pause, resume and remove on the viewer's own schedules (and on
    # every one for an admin); the API checks each action again.
    viewer_id = str(viewer.caller.user.id)
    return render(request, "schedules.html", viewer, nav="schedules", viewer_id=viewer_id)
