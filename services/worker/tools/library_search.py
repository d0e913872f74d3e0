"""`library_search(query, mode?, k?, kind?)`: search the lab library over HTTP as the job's user."""

from __future__ import annotations

import uuid
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from services.common.contracts.collections import Collection
from services.common.documents.collections import (
    LAB_COLLECTION,
)
from services.common.telemetry import inject_carrier
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult


class LibrarySearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=2000, description="what to look for")
    mode: Literal["survey", "derive", "write", "keyword", "vector", "mix"] = Field(
        default="mix",
        description="survey: broad, per-paper capped; derive: premises → target statement; "
        "write: formal, citable statements; keyword / vector / mix: raw retrieval",
    )
    k: int = Field(default=8, ge=1, le=30, description="how many passages")
    kind: Literal["text", "table", "caption"] | None = Field(
        default=None,
        description="only body text, only tables (Markdown, caption first) or only figure "
        "captions; omit for all",
    )


class LibrarySearchTool(Tool[LibrarySearchArgs]):
    name = "library_search"
    description = (
        "Search the lab's paper library. Returns passages with locators "
        "'paper | section | environment | page' to cite."
    )
    args_model = LibrarySearchArgs
    effect = ToolEffect.READ_ONLY
    retry_safe = True

    def run(self, args: LibrarySearchArgs, ctx: ToolContext) -> ToolResult:
        items = search_library(ctx, args.query, mode=args.mode, k=args.k, kind=args.kind)
        if not items:
            return ToolResult("No passages found in the library.", {"items": []})
        lines = [
            f"[{i + 1}] {h['locator']}{' (table)' if h.get('kind') == 'table' else ''}\n{h['text']}"
            for i, h in enumerate(items)
        ]
        return ToolResult("\n\n".join(lines), {"items": items})


def search_library(
    ctx: ToolContext,
    query: str,
    *,
    mode: str = "mix",
    k: int = 8,
    kind: str | None = None,
    documents: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The library's hits for ``query`` as the job's user (``documents``: only theirs)."""
    if ctx.library is None:
        raise ToolError("library_unconfigured", "the library service is not configured")
    # The library re-derives what this user may read; the job's own library
    # and project only narrow that set. The trace context makes the
    # library's spans part of this job's trace.
    base, token = ctx.library.url, ctx.library.internal_token
    collections = [Collection.personal(uuid.UUID(ctx.user_id)), LAB_COLLECTION]
    if ctx.project_id:
        collections.append(Collection.project(uuid.UUID(ctx.project_id)))
    headers = {
        "X-Leaflab-Internal": str(token),
        "X-Leaflab-User": ctx.user_id,
        **inject_carrier(),
    }
    params: dict[str, str | int | list[str] | list[Collection]] = {
        "q": query,
        "mode": mode,
        "k": k,
        "collection": collections,
    }
    if kind is not None:
        params["kind"] = kind
    if documents is not None:
        params["document"] = documents
    try:
        resp = httpx.get(f"{base}/search", headers=headers, params=params, timeout=30)
    except httpx.HTTPError as exc:
        raise ToolError(
            "library_unavailable", f"library unreachable: {exc}", retryable=True
        ) from None
    if resp.status_code >= 500:
        raise ToolError("library_error", f"library answered {resp.status_code}", retryable=True)
    if resp.status_code != 200:
        message = resp.json().get("error", {}).get("message", resp.text[:300])
        raise ToolError("library_rejected", message, category="validation")
    items: list[dict[str, Any]] = resp.json()["items"]
    return items


def library_tools() -> list[Tool[Any]]:
    return [LibrarySearchTool()]
