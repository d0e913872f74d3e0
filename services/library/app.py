"""The library HTTP service (internal), run with uvicorn:
``uvicorn --factory services.library.app:create_app --port 8200``.

Callers are the API (which authenticates users) and workers; they present the
internal token and say whose request it is in X-Leaflab-User / -Collections.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from services.common.db import transaction
from services.common.models import Document
from services.library.access import CallerDep, LibraryError, error_body
from services.library.fetch import FetchRefused, fetch_pdf
from services.library.ingest import PDF_MAGIC, register_document
from services.library.retrieval import MODES
from services.library.runtime import LibraryRuntime, build_runtime
from services.library.settings import LibrarySettings, get_library_settings
from services.library.tasks import INGEST_TASK, EmbeddedConsumer, register_ingest_task


def document_view(doc: Document, *, full: bool = False) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": str(doc.id),
        "title": doc.title,
        "filename": doc.filename,
        "status": doc.status,
        "error": doc.error,
        "pages": doc.pages,
        "collection": doc.collection,
        "chunks": doc.chunks,
        "source_url": doc.source_url,
        "created_at": doc.created_at.isoformat() if doc.created_at else None,
    }
    if full:
        view["structure"] = doc.structure
    return view


def _project_of(collection: str) -> uuid.UUID | None:
    kind, _, ident = collection.partition(":")
    if kind == "project":
        return uuid.UUID(ident)
    return None


async def _read_upload(request: Request, limit: int) -> tuple[bytes, str | None, dict[str, Any]]:
    """The PDF bytes, file name and other fields of a multipart or JSON request."""
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("multipart/form-data"):
        form = await request.form(max_files=1)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise LibraryError(400, "invalid_request", "multipart upload needs a 'file' part")
        data = await upload.read(limit + 1)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        return data, upload.filename, fields
    try:
        body = await request.json()
    except ValueError:
        raise LibraryError(400, "invalid_request", "send a multipart PDF or JSON {url}") from None
    if not isinstance(body, dict) or not isinstance(body.get("url"), str):
        raise LibraryError(400, "invalid_request", 'JSON body must be {"url": ..., "collection"?}')
    runtime: LibraryRuntime = request.app.state.runtime
    s = runtime.settings
    try:
        data = await asyncio.to_thread(
            fetch_pdf,
            body["url"],
            max_bytes=limit,
            timeout_s=s.url_fetch_timeout_s,
            allow_private=s.url_allow_private,
        )
    except FetchRefused as exc:
        raise LibraryError(400, "url_refused", str(exc)) from None
    name = body["url"].rstrip("/").rsplit("/", 1)[-1] or None
    return data, name, {"collection": body.get("collection"), "source_url": body["url"]}


def _routes(app: FastAPI) -> None:
    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        runtime: LibraryRuntime = app.state.runtime
        return {"status": "ok", "chunks": runtime.store.count()}

    @app.post("/documents", status_code=202)
    async def add_document(request: Request, who: CallerDep) -> JSONResponse:
        runtime: LibraryRuntime = app.state.runtime
        limit = runtime.settings.max_upload_bytes
        data, filename, fields = await _read_upload(request, limit)
        if len(data) > limit:
            raise LibraryError(413, "too_large", f"the file is larger than {limit} bytes")
        if not data.lstrip()[:5].startswith(PDF_MAGIC):
            raise LibraryError(415, "not_pdf", "the file is not a PDF (no %PDF- header)")
        collection = fields.get("collection") or f"user:{who.user_id}"
        if collection not in who.collections:
            raise LibraryError(403, "forbidden", f"no write access to collection {collection}")

        def register() -> tuple[str, str, bool]:
            with transaction(runtime.session_factory) as db:
                doc, created = register_document(
                    db,
                    runtime=runtime,
                    data=data,
                    filename=filename,
                    collection=collection,
                    owner_id=who.user_id,
                    project_id=_project_of(collection),
                    source_url=fields.get("source_url"),
                )
                return str(doc.id), doc.status, created

        try:
            doc_id, status, created = await asyncio.to_thread(register)
        except IntegrityError:
            raise LibraryError(400, "invalid_request", f"unknown collection {collection}") from None
        if created:  # after commit, so the task never sees a missing row
            runtime.celery.send_task(INGEST_TASK, args=[doc_id], queue="library")
        return JSONResponse(
            {"id": doc_id, "status": status, "duplicate": not created}, status_code=202
        )

    @app.get("/documents")
    def list_documents(who: CallerDep) -> dict[str, Any]:
        runtime: LibraryRuntime = app.state.runtime
        with transaction(runtime.session_factory) as db:
            docs = db.scalars(
                select(Document)
                .where(Document.collection.in_(who.collections))
                .order_by(Document.created_at.desc())
                .limit(1000)
            ).all()
            return {"items": [document_view(d) for d in docs]}

    @app.get("/documents/{document_id}")
    def get_document(document_id: str, who: CallerDep) -> dict[str, Any]:
        runtime: LibraryRuntime = app.state.runtime
        try:
            ident = uuid.UUID(document_id)
        except ValueError:
            raise LibraryError(404, "not_found", "document not found") from None
        with transaction(runtime.session_factory) as db:
            doc = db.get(Document, ident)
            if doc is None or doc.collection not in who.collections:
                raise LibraryError(404, "not_found", "document not found")
            return document_view(doc, full=True)

    @app.get("/search")
    def search(who: CallerDep, q: str = "", mode: str = "mix", k: int = 10) -> dict[str, Any]:
        runtime: LibraryRuntime = app.state.runtime
        if not q.strip() or len(q) > 2000:
            raise LibraryError(400, "invalid_request", "q must be 1–2000 characters")
        if mode not in MODES:
            raise LibraryError(400, "invalid_request", f"mode must be one of {', '.join(MODES)}")
        if not 1 <= k <= 100:
            raise LibraryError(400, "invalid_request", "k must be between 1 and 100")
        hits = runtime.retriever.search(q, collections=who.collections, mode=mode, k=k)
        return {
            "items": [
                {
                    "document_id": h.payload.get("document_id"),
                    "title": h.payload.get("title"),
                    "filename": h.payload.get("filename"),
                    "locator": h.payload.get("locator"),
                    "page": h.payload.get("page"),
                    "section": h.payload.get("section"),
                    "kind": h.payload.get("kind"),
                    "text": h.payload.get("text"),
                    "score": h.score,
                }
                for h in hits
            ]
        }


def create_app(settings: LibrarySettings | None = None) -> FastAPI:
    """App factory; the lifespan opens the store and models and starts the consumer."""
    settings = settings or get_library_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = await asyncio.to_thread(build_runtime, settings)
        app.state.runtime = runtime
        register_ingest_task(runtime.celery, lambda: runtime)
        consumer = None
        if settings.embedded_consumer:
            consumer = EmbeddedConsumer(runtime.celery, concurrency=settings.consumer_concurrency)
            consumer.start()
        try:
            yield
        finally:
            if consumer is not None:
                await asyncio.to_thread(consumer.stop)
            runtime.close()

    app = FastAPI(title="Leaflab library", lifespan=lifespan)

    @app.exception_handler(LibraryError)
    async def _library_error(_: Request, exc: LibraryError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        msg = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        return JSONResponse(error_body("invalid_request", msg or "invalid request"), 422)

    _routes(app)
    return app
