"""The admin dashboard (admins with an unscoped key only; everyone else gets 403).

The page is a shell: its script reads everything from ``/v1/admin/*`` with the
session cookie, so the page itself never carries a key or any other secret. The
Models section is rendered here from the workers' capability records in Redis
(no key travels: records never hold one).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from services.api.deps import StateDep
from services.api.web.page_auth import AdminViewer
from services.api.web.templating import render
from services.common import model_caps

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
# The capabilities shown per endpoint, in this order, with their labels.
MODEL_FIELDS = (
    ("context_tokens", "context"),
    ("structured_output", "structured output"),
    ("tool_mode", "tools"),
    ("stream_tool_calls", "streamed tool calls"),
    ("system_role", "system role"),
    ("alternation", "alternation"),
    ("max_concurrency", "concurrency"),
    ("template_overhead_tokens", "template overhead"),
)


def _model_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        effective = record.get("effective") or {}
        discovered = record.get("discovered") or {}
        sources = record.get("sources") or {}
        values = []
        expired = bool(record.get("expired"))
        for field, label in MODEL_FIELDS:
            value = effective.get(field)
            if field == "max_concurrency" and value is None:
                value = "unlimited"
            values.append({"label": label, "value": value, "source": sources.get(field, "")})
        rows.append(
            {
                "profile": record.get("profile"),
                "model": record.get("model"),
                "base_url": record.get("base_url", ""),
                "server": discovered.get("server", "unknown"),
                "reachable": discovered.get("reachable", True) and not expired,
                "error": discovered.get("error") or ("rediscovering" if expired else ""),
                "caps": values,
            }
        )
    return rows


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(request: Request, viewer: AdminViewer, state: StateDep) -> HTMLResponse:
    try:
        records = await asyncio.to_thread(model_caps.read_records, state.redis)
    except Exception:  # noqa: BLE001 - a Redis outage must not take the dashboard down
        log.exception("reading model capabilities failed")
        records = []
    return render(request, "admin.html", viewer, nav="admin", models=_model_rows(records))
