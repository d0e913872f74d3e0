"""Accepting a document: stream the upload to disk under a cap, name it safely,
and register its row (queued) so `library.ingest` can pick it up.

The request body is never held in memory: it is read chunk by chunk, refused
with 413 as soon as it passes the cap (with or without a Content-Length), and
written to a private staging file that becomes the content-addressed blob.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import unicodedata
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request

from services.common.contracts.errors import ServiceError
from services.common.documents.blobs import BlobStore
from services.common.pdf_child.runner import ChildLimits, PdfReadFailed, read_pdf

PDF_MAGIC = b"%PDF-"
MAX_FILENAME_CHARS = 200
# Multipart framing and small form fields on top of the file itself.
FORM_OVERHEAD_BYTES = 1 << 20
MAX_JSON_BYTES = 64 << 10
COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class ReceivedFile:
    content_hash: str
    filename: str
    size: int
    fields: dict[str, str] = field(default_factory=dict)


def safe_filename(raw: str | None, fallback: str = "upload.pdf") -> str:
    """A display name with no path parts, control characters or excessive length."""
    name = (raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = unicodedata.normalize("NFC", name)
    # Categories C* are control, format (bidi overrides), surrogates, private use.
    name = "".join(ch for ch in name if not unicodedata.category(ch).startswith("C"))
    name = name.strip().lstrip(".").strip()
    if len(name) > MAX_FILENAME_CHARS:
        suffix = PurePosixPath(name).suffix[:16]
        name = name[: MAX_FILENAME_CHARS - len(suffix)] + suffix
    return name or fallback


def url_key(url: str) -> str:
    """The blob key of a document fetched from ``url`` (fetched later by the ingest task)."""
    return hashlib.sha256(b"url:" + url.encode()).hexdigest()


def _declared_too_large(request: Request, limit: int) -> bool:
    declared = request.headers.get("content-length", "")
    return declared.isdigit() and int(declared) > limit


async def _capped(
    request: Request, limit: int, cap_for_message: int
) -> AsyncGenerator[bytes, None]:
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            raise ServiceError(
                413, "too_large", f"the upload is larger than {cap_for_message} bytes"
            )
        yield chunk


async def read_json_body(request: Request) -> Any:
    """A small JSON body, refused (413) past 64 KiB however it is sent."""
    if _declared_too_large(request, MAX_JSON_BYTES):
        raise ServiceError(413, "too_large", f"JSON body larger than {MAX_JSON_BYTES} bytes")
    body = bytearray()
    async for chunk in _capped(request, MAX_JSON_BYTES, MAX_JSON_BYTES):
        body.extend(chunk)
    try:
        return json.loads(body)
    except ValueError:
        raise ServiceError(400, "invalid_request", "the body is not valid JSON") from None


async def receive_pdf(
    request: Request, *, store: BlobStore, max_bytes: int, check: ChildLimits
) -> ReceivedFile:
    """Read a multipart upload (part ``file`` plus small text fields) into the store;
    ``check``: the limits of the child process that opens it before it is stored."""
    form, upload = await _file_form(request, max_bytes, "upload")
    try:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        content_hash, size = await _copy_into_store(upload, store, max_bytes, check)
        return ReceivedFile(content_hash, safe_filename(upload.filename), size, fields)
    finally:
        await form.close()


async def receive_small_file(
    request: Request, *, max_bytes: int
) -> tuple[str, bytes, dict[str, str]]:
    """A multipart upload (part ``file`` plus small text fields) read into memory,
    refused with 413 past ``max_bytes``: (file name, content, fields)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise ServiceError(
            400, "invalid_request", "send the file as multipart/form-data (a part named 'file')"
        )
    form, upload = await _file_form(request, max_bytes, "file")
    try:
        content = await upload.read(max_bytes + 1)
        if len(content) > max_bytes:
            raise ServiceError(413, "too_large", f"the file is larger than {max_bytes} bytes")
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        return safe_filename(upload.filename, "bibliography"), content, fields
    finally:
        await form.close()


async def _file_form(request: Request, max_bytes: int, what: str) -> tuple[FormData, UploadFile]:
    """The parsed multipart form (the caller closes it) and its ``file`` part, the
    body capped at ``max_bytes`` of file plus the form's small overhead."""
    if _declared_too_large(request, max_bytes + FORM_OVERHEAD_BYTES):
        raise ServiceError(413, "too_large", f"the {what} is larger than {max_bytes} bytes")
    parser = MultiPartParser(
        request.headers,
        _capped(request, max_bytes + FORM_OVERHEAD_BYTES, max_bytes),
        max_files=1,
        max_fields=20,
    )
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise ServiceError(400, "invalid_request", f"malformed multipart body: {exc}") from None
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        await form.close()
        raise ServiceError(400, "invalid_request", "multipart upload needs a 'file' part")
    return form, upload


async def _copy_into_store(
    upload: UploadFile, store: BlobStore, max_bytes: int, check: ChildLimits
) -> tuple[str, int]:
    staged, out = store.staging()
    digest = hashlib.sha256()
    size = 0
    head = b""
    try:
        with out:
            while chunk := await upload.read(COPY_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise ServiceError(
                        413, "too_large", f"the file is larger than {max_bytes} bytes"
                    )
                if len(head) < 1024:
                    head += chunk[:1024]
                digest.update(chunk)
                out.write(chunk)
        if not head.lstrip()[:5].startswith(PDF_MAGIC):
            raise ServiceError(415, "not_pdf", "the file is not a PDF (no %PDF- header)")
        if not await asyncio.to_thread(_opens_as_pdf, staged, check):
            raise ServiceError(
                415, "not_pdf", "the file starts like a PDF but PyMuPDF cannot open it"
            )
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    key = digest.hexdigest()
    store.commit(staged, key)
    return key, size


def _opens_as_pdf(path: Path, limits: ChildLimits) -> bool:
    """Whether PyMuPDF opens the file as a PDF (its cross-reference table and
    trailer: no page is rendered or inflated here), so a ``%PDF-`` header on an
    HTML page or garbage is refused before it is stored and served as a paper.

    Opened in a limited child, never in this process: a 200 KB file whose
    cross-reference streams declare millions of objects takes over a GB to open.
    A file that passes the child's limits is refused (422) with the reason.
    """
    try:
        return bool(read_pdf("check", path, limits)["pdf"])
    except PdfReadFailed as failed:
        if failed.kind == "invalid":
            return False
        if failed.kind == "busy":
            raise ServiceError(503, "busy", failed.reason) from None
        raise ServiceError(
            422, "pdf_rejected", f"the PDF could not be opened within the limits: {failed.reason}"
        ) from None
