"""The 404 page of an object page whose object the viewer may not see (or that does not
exist: the two look the same, as in the JSON API)."""

from __future__ import annotations

import uuid

from fastapi import Request
from fastapi.responses import HTMLResponse

from services.api.access import visible_job
from services.api.deps import DbSession
from services.api.web.page_auth import Viewer
from services.api.web.templating import render
from services.common.contracts.errors import ServiceError


def may_see_job(db: DbSession, viewer: Viewer, job_id: uuid.UUID) -> bool:
    """The JSON API's rule for ``GET /v1/jobs/{id}``, for a page shell."""
    try:
        visible_job(db, viewer.caller.user, str(job_id))
    except ServiceError:
        return False
    return True


def not_found_page(
    request: Request, viewer: Viewer, what: str, *, back: str, back_label: str
) -> HTMLResponse:
    return render(
        request,
        "not_found.html",
        viewer,
        status_code=404,
        what=what,
        back=back,
        back_label=back_label,
    )
