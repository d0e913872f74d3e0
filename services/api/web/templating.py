"""Jinja2 templates (autoescaped) and the context every page shares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from services.api.web.page_auth import Viewer

TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"

templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
# Jinja2Templates autoescapes .html; make it explicit for every template we render.
templates.env.autoescape = True


def render(
    request: Request,
    name: str,
    viewer: Viewer | None,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    shared: dict[str, Any] = {
        "viewer": viewer,
        "user_email": viewer.caller.user.email if viewer else None,
        "is_admin": viewer.is_admin if viewer else False,
        "csrf_token": viewer.session.csrf if viewer else "",
    }
    return templates.TemplateResponse(request, name, {**shared, **context}, status_code=status_code)
