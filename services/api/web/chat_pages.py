"""The chat page: sessions on the left, the conversation with live tool activity on the right.

The page is a shell; static/chat.js reads and writes everything through the JSON API
with the session cookie.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from services.api.deps import StateDep
from services.api.web.page_auth import PageViewer
from services.api.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def chat_page(
    request: Request,
    viewer: PageViewer,
    state: StateDep,
    session: uuid.UUID | None = Query(None, description="the session to open"),
) -> HTMLResponse:
    return render(
        request,
        "chat.html",
        viewer,
        nav="chat",
        session_id=str(session) if session else "",
        context_limit=state.settings.context_limit_tokens,
        model_simulated=state.settings.model_simulated,
    )
