"""`pdf_fetch(url, add_to_library?)`: a PDF's text, page by page, and optionally
the paper itself added to the job's project library.

The download has the same protections as web_fetch (address guard on every
hop, size and time caps; a larger cap for PDFs). Text comes from PyMuPDF with
``[page N]`` markers so the model can cite pages; with ``add_to_library`` the
same bytes go through the library's document intake and the result carries
the document id (see services/worker/tools/library_intake.py).

PyMuPDF never runs in the worker process: the text is read by a one-shot child
under memory, CPU and wall-clock limits (services/common/pdf_child), killed when
the call times out (``ctx.cancel``), so a PDF bomb costs a child its limit and
leaves no parse running beside a retry.
"""

from __future__ import annotations

import io
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from services.common.documents.blobs import BlobStore
from services.common.documents.intake import PDF_MAGIC, safe_filename
from services.common.net_guard import AddressRefused, fetch_to
from services.common.pdf_child.runner import ChildLimits, PdfReadFailed, read_pdf
from services.worker.tools.base import Tool, ToolContext, ToolEffect, ToolError, ToolResult
from services.worker.tools.library_intake import add_pdf_to_library
from services.worker.tools.ports import IngestQueue
from services.worker.tools.web.outbound import USER_AGENT, fetch_error
from services.worker.tools.web.page import check_web_url, window
from services.worker.tools.web.settings import ResearchToolSettings

MAX_PAGES = 500
# Far more than the model reads in a call (it pages by offset), far less than a
# text bomb would hand the worker.
MAX_TEXT_CHARS = 5_000_000


class PdfFetchArgs(BaseModel):
    url: str = Field(min_length=1, max_length=2000, description="an http(s) URL of a PDF")
    add_to_library: bool = Field(
        default=False, description="also add the PDF to this project's paper library"
    )
    offset: int = Field(default=0, ge=0, description="first character to return (paging)")


@dataclass(frozen=True)
class PdfText:
    title: str
    pages: list[str]

    def text(self) -> str:
        return "\n\n".join(f"[page {i}]\n{page}" for i, page in enumerate(self.pages, start=1))


def pdf_text(data: bytes, limits: ChildLimits, *, cancel: threading.Event | None = None) -> PdfText:
    """Each page's text (up to MAX_PAGES), read in a limited child; ToolError when
    the file is no readable PDF or the read passes a limit."""
    with tempfile.TemporaryDirectory(prefix="leaflab-pdf-") as folder:
        path = Path(folder) / "fetched.pdf"
        path.write_bytes(data)
        try:
            read = read_pdf(
                "text", path, limits, max_pages=MAX_PAGES, max_chars=MAX_TEXT_CHARS, cancel=cancel
            )
        except PdfReadFailed as failed:
            raise _read_error(failed) from None
    title = str(read["title"] or "")
    pages = [str(page) for page in read["pages"]]
    if not title and pages:
        title = next((line.strip() for line in pages[0].splitlines() if line.strip()), "")
    return PdfText(title=title[:300], pages=pages)


def _read_error(failed: PdfReadFailed) -> ToolError:
    if failed.kind == "invalid":
        return ToolError("invalid_pdf", failed.reason)
    if failed.kind == "busy":
        return ToolError("busy", failed.reason, retryable=True)
    if failed.kind == "cancelled":
        return ToolError("timeout", failed.reason, category="timeout")
    # A limit: the same file would only hit it again, so not retryable.
    return ToolError(
        "pdf_too_complex",
        f"the PDF could not be read within the reader's limits: {failed.reason}",
        category="validation",
    )


class PdfFetchTool(Tool[PdfFetchArgs]):
    name = "pdf_fetch"
    description = (
        "Download a PDF (http/https) and return its text with [page N] markers; "
        "add_to_library: true also adds it to the project's paper library (the result "
        "gives the document id). Long PDFs come in windows: pass offset to read on."
    )
    args_model = PdfFetchArgs
    # Adding to the library is keyed by content: running the call again adds nothing.
    effect = ToolEffect.IDEMPOTENT
    retry_safe = True
    timeout_s = 120.0

    def __init__(self, settings: ResearchToolSettings, *, ingest: IngestQueue | None) -> None:
        self._settings = settings
        self._guard = settings.net_guard()
        self._ingest = ingest

    def run(self, args: PdfFetchArgs, ctx: ToolContext) -> ToolResult:
        check_web_url(args.url)
        buffer = io.BytesIO()
        try:
            fetched = fetch_to(
                args.url,
                buffer,
                guard=self._guard,
                max_bytes=self._settings.pdf_fetch_max_bytes,
                timeout_s=self._settings.web_fetch_timeout_s * 3,
                headers={"User-Agent": USER_AGENT, "Accept": "application/pdf,*/*;q=0.5"},
            )
        except AddressRefused as exc:
            raise fetch_error(exc, what=args.url[:200]) from None
        data = buffer.getvalue()
        if not data.lstrip()[:5].startswith(PDF_MAGIC):
            raise ToolError(
                "not_pdf",
                f"the URL did not return a PDF (content type {fetched.content_type or 'unknown'});"
                " use web_fetch for web pages",
                category="validation",
            )
        parsed = pdf_text(data, self._settings.pdf_text_limits(), cancel=ctx.cancel)
        text = parsed.text()
        part, note = window(text, args.offset, self._settings.web_text_max_chars)
        result: dict[str, object] = {
            "url": fetched.url,
            "title": parsed.title,
            "pages": len(parsed.pages),
            "bytes": fetched.size,
            "chars": len(text),
            "truncated": bool(note),
        }
        head = f"# {parsed.title}\nURL: {fetched.url}\nPages: {len(parsed.pages)}\n"
        if args.add_to_library:
            added = add_pdf_to_library(
                data,
                filename=_filename(fetched.url),
                source_url=fetched.url,
                ctx=ctx,
                store=BlobStore(self._settings.resolved_files_dir),
                queue=self._ingest,
            )
            result["document_id"] = added.id
            result["document_status"] = added.status
            result["duplicate"] = added.duplicate
            state = "already in" if added.duplicate else "added to"
            head += f"Library: {state} the library as document {added.id} ({added.status})\n"
        return ToolResult(f"{head}\n{part}{note}", result)


def _filename(url: str) -> str:
    name = safe_filename(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1], "download.pdf")
    return name if name.lower().endswith(".pdf") else f"{name}.pdf"
