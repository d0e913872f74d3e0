"""Accepting a document at the API: read the upload or the URL, then admit it.

Uploads and URLs are accepted here directly — streamed into the shared file
store, registered as a queued document and sent to the `library` queue after
commit (``admit_document``) — so ingestion never depends on the library's HTTP
service being up. The router only names the route; refusals are ServiceErrors.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from services.api.library.access import LibraryAccess
from services.api.library.schemas import LibraryDocumentAccepted
from services.api.state import AppState
from services.common.contracts.collections import Collection
from services.common.contracts.errors import ServiceError
from services.common.contracts.tasks import send_ingest
from services.common.documents.admission import AdmissionFailed, admit_document
from services.common.documents.blobs import BlobStore
from services.common.documents.intake import (
    read_json_body,
    receive_pdf,
    safe_filename,
    url_key,
)
from services.common.documents.settings import IntakeSettings
from services.common.net_guard import AddressRefused, InvalidUrl, check_url

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _intake_settings() -> IntakeSettings:
    return IntakeSettings()


def intake_settings() -> IntakeSettings:
    """Where uploads go and how large they may be (tests override this dependency)."""
    return _intake_settings()


IntakeDep = Annotated[IntakeSettings, Depends(intake_settings)]


@dataclass(frozen=True)
class Submitted:
    """What a request named: the document's key (content hash or URL key), its
    file name, the collection it goes to, and the URL it is to be fetched from."""

    key: str
    name: str
    collection: Collection
    url: str | None


async def accept_document(
    request: Request,
    db: Session,
    access: LibraryAccess,
    state: AppState,
    intake: IntakeSettings,
) -> LibraryDocumentAccepted:
    """A multipart PDF or a JSON ``{"url"}`` → the queued (or already known) document."""
    # End the authentication transaction before a possibly minutes-long body:
    # it holds the API key row's last_used_at update (a row lock) and a pooled
    # connection, which other requests with the same key would wait for.
    await asyncio.to_thread(db.commit)
    submitted = await _read_submission(request, access, intake)
    return await asyncio.to_thread(_admit, state, access, submitted)


async def _read_submission(
    request: Request, access: LibraryAccess, intake: IntakeSettings
) -> Submitted:
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        received = await receive_pdf(
            request,
            store=BlobStore(intake.resolved_files_dir),
            max_bytes=intake.max_upload_bytes,
            check=intake.pdf_check_limits(),
        )
        collection = access.collection_for(
            received.fields.get("project"), received.fields.get("collection")
        )
        return Submitted(received.content_hash, received.filename, collection, None)
    body = await read_json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("url"), str):
        shape = '{"url": ..., "project"?, "collection"?}'
        raise ServiceError(400, "invalid_request", f"JSON body must be {shape}")
    url = body["url"]
    _check_url_form(url)
    collection = access.collection_for(body.get("project"), body.get("collection"))
    name = safe_filename(url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    return Submitted(url_key(url), name, collection, url)


def _check_url_form(url: str) -> None:
    """What is refusable before the network: a malformed URL (``invalid_url``), a
    host spelling the guard never fetches (``url_refused``); both 400, never a 500.
    The address itself is checked when the ingest task fetches it."""
    try:
        check_url(url)
    except InvalidUrl as exc:
        raise ServiceError(400, "invalid_url", str(exc)) from None
    except AddressRefused as exc:
        raise ServiceError(400, "url_refused", str(exc)) from None


def _admit(state: AppState, access: LibraryAccess, sub: Submitted) -> LibraryDocumentAccepted:
    try:
        admitted = admit_document(
            state.session_factory,
            partial(send_ingest, state.celery),
            content_hash=sub.key,
            filename=sub.name,
            collection=sub.collection,
            owner_id=access.user_id,
            source_url=sub.url,
        )
    except AdmissionFailed as exc:
        status = 409 if exc.code == "conflict" else 404
        raise ServiceError(status, exc.code, exc.message) from None
    if not admitted.duplicate:
        log.info("library: document %s queued in %s", admitted.id, sub.collection)
    return LibraryDocumentAccepted(
        id=admitted.id, status=admitted.status, duplicate=admitted.duplicate
    )
