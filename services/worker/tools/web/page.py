"""`web_fetch(url)`: one web page as a cleaned title and readable text.

Only http and https; the address guard (services/common/net_guard.py) checks
the address actually connected to, on every redirect hop. The body is capped
in bytes and time, and the text the model reads in characters; a longer page
is read in windows with ``offset``.
"""

from __future__ import annotations

import io
import json
import re

from pydantic import BaseModel, Field

from services.common.net_guard import AddressRefused, InvalidUrl, check_url_form, fetch_to
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.web.html_text import html_to_text
from services.worker.tools.web.outbound import USER_AGENT, fetch_error
from services.worker.tools.web.settings import ResearchToolSettings

TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json", "text/xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class WebFetchArgs(BaseModel):
    url: str = Field(min_length=1, max_length=2000, description="an http(s) URL")
    offset: int = Field(default=0, ge=0, description="first character to return (paging)")


def check_web_url(url: str) -> None:
    """Refuse what is not a well-formed http(s) URL with a host before any network
    use: ``invalid_url`` (a validation error the model can fix), never a crash."""
    try:
        check_url_form(url)
    except InvalidUrl as exc:
        raise ToolError(
            "invalid_url",
            f"{exc}; only well-formed http and https URLs with a host can be fetched, "
            f"not {url[:200]!r}",
            category="validation",
        ) from None


def window(text: str, offset: int, limit: int) -> tuple[str, str]:
    """``text[offset:offset+limit]`` and a note telling the model how to read on."""
    if offset >= len(text) and text:
        raise ToolError(
            "invalid_arguments",
            f"offset {offset} is past the end of the text ({len(text)} characters)",
            category="validation",
        )
    part = text[offset : offset + limit]
    end = offset + len(part)
    if end < len(text):
        return part, (
            f"\n\n[showing characters {offset}-{end} of {len(text)}; "
            f"call again with offset={end} to read on]"
        )
    return part, ""


class WebFetchTool(Tool[WebFetchArgs]):
    name = "web_fetch"
    description = (
        "Fetch a web page (http/https) and return its title and readable text. "
        "Long pages come in windows: pass offset to read on. Use pdf_fetch for PDFs."
    )
    args_model = WebFetchArgs
    effect = ToolEffect.READ_ONLY
    retry_safe = True
    timeout_s = 60.0

    def __init__(self, settings: ResearchToolSettings) -> None:
        self._settings = settings
        self._guard = settings.net_guard()

    def run(self, args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
        check_web_url(args.url)
        buffer = io.BytesIO()
        try:
            fetched = fetch_to(
                args.url,
                buffer,
                guard=self._guard,
                max_bytes=self._settings.web_fetch_max_bytes,
                timeout_s=self._settings.web_fetch_timeout_s,
                headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
            )
        except AddressRefused as exc:
            raise fetch_error(exc, what=args.url[:200]) from None
        body = buffer.getvalue()
        mime = fetched.content_type.split(";", 1)[0].strip().lower()
        if mime == "application/pdf" or body[:5] == b"%PDF-":
            raise ToolError(
                "unsupported_content",
                "this URL is a PDF: read it with pdf_fetch",
                category="validation",
            )
        text = _decode(body, fetched.content_type)
        if mime in HTML_TYPES or (not mime and "<html" in text[:2000].lower()):
            page = html_to_text(text)
            title, content = page.title, page.text
        elif mime in TEXT_TYPES or mime.startswith("text/") or mime.endswith("+json"):
            title, content = "", _pretty(text, mime)
        else:
            raise ToolError(
                "unsupported_content",
                f"cannot read content of type {mime or 'unknown'!r} as text",
                category="validation",
                details={"content_type": mime},
            )
        part, note = window(content, args.offset, self._settings.web_text_max_chars)
        head = f"# {title}\n" if title else ""
        data = {
            "url": fetched.url,
            "title": title,
            "content_type": mime,
            "bytes": fetched.size,
            "chars": len(content),
            "offset": args.offset,
            "truncated": bool(note),
        }
        return ToolResult(f"{head}URL: {fetched.url}\n\n{part}{note}", data)


def _decode(body: bytes, content_type: str) -> str:
    charset = None
    match = re.search(r"charset=([A-Za-z0-9_.:-]+)", content_type, re.IGNORECASE)
    if match:
        charset = match.group(1)
    else:
        meta = _META_CHARSET.search(body[:4096])
        charset = meta.group(1).decode("ascii") if meta else None
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name in the page
        return body.decode("utf-8", errors="replace")


def _pretty(text: str, mime: str) -> str:
    if mime == "application/json" or mime.endswith("+json"):
        try:
            return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
        except ValueError:
            return text
    return text
