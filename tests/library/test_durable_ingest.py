"""Durable ingestion on real processes: a lost message, a library service killed
-9 mid-ingest, and a document whose every attempt dies — the sweeper brings the
first two to `ready` and fails the third with a reason after N tries."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.documents.admission import register_document
from services.common.documents.blobs import BlobStore
from services.common.models import Document
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import LibraryProcess, PdfServer, library_env, make_user

MAX_ATTEMPTS = 3


@pytest.fixture
def durable_env(files_dir: Path, pdf_server: PdfServer, isolated_redis_url: str) -> dict[str, str]:
    """Fast leases and sweeps, on a Redis db of its own (the session's library
    service must not consume these messages)."""
    redis.Redis.from_url(isolated_redis_url).flushdb()
    return {
        **library_env(files_dir, pdf_server),
        "LEAFLAB_REDIS_URL": isolated_redis_url,
        "LEAFLAB_INGEST_LEASE_TTL_S": "6",
        "LEAFLAB_INGEST_SWEEP_INTERVAL_S": "0.5",
        "LEAFLAB_INGEST_REQUEUE_AFTER_S": "2",
        "LEAFLAB_INGEST_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
    }


@pytest.fixture
def procs() -> Iterator[list[LibraryProcess]]:
    started: list[LibraryProcess] = []
    yield started
    for proc in started:
        proc.stop()


def _start(procs: list[LibraryProcess], tmp_path: Path, env: dict[str, str]) -> LibraryProcess:
    home = tmp_path / f"home-{len(procs)}"
    home.mkdir()
    proc = LibraryProcess(home, env)
    procs.append(proc)
    proc.wait_ready()
    return proc


def _row(factory: sessionmaker[Session], doc_id: uuid.UUID) -> Document:
    with factory() as db:
        doc = db.get(Document, doc_id)
        assert doc is not None
        db.expunge(doc)
        return doc


def _wait(
    factory: sessionmaker[Session], doc_id: uuid.UUID, done: object, timeout_s: float = 180
) -> Document:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        doc = _row(factory, doc_id)
        if callable(done) and done(doc):
            return doc
        time.sleep(0.05)
    raise AssertionError(f"document {doc_id}: condition not reached; last {doc.status}")


def _stored_document(
    factory: sessionmaker[Session], files_dir: Path, pdf: Path, owner: uuid.UUID
) -> uuid.UUID:
    """A stored, queued document whose message was lost (never sent)."""
    key = BlobStore(files_dir).put(pdf.read_bytes())
    with factory() as db, db.begin():
        doc, created = register_document(
            db,
            content_hash=key,
            filename=pdf.name,
            collection=Collection.personal(owner),
            owner_id=owner,
            project_id=None,
        )
        assert created
        return doc.id


def _in_flight_attempt(n: int) -> object:
    return lambda d: d.status in ("parsing", "embedding") and d.attempts == n


class TestDurableIngestion:
    def test_lost_message_then_killed_mid_ingest_both_reach_ready(
        self,
        durable_env: dict[str, str],
        procs: list[LibraryProcess],
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        owner = make_user(session_factory, unique)
        lost = _stored_document(
            session_factory, files_dir, hostile_pdfs.theorem_pdf(tmp_path / "lost.pdf"), owner
        )
        first = _start(procs, tmp_path, durable_env)
        doc = _wait(session_factory, lost, lambda d: d.status in ("ready", "failed"))
        assert (doc.status, doc.error, doc.attempts) == ("ready", None, 1)
        assert f"requeueing document {lost}" in first.log()

        crashing = _stored_document(
            session_factory,
            files_dir,
            hostile_pdfs.text_pdf(tmp_path / "long.pdf", marker=f"m{unique}"),
            owner,
        )
        _wait(session_factory, crashing, _in_flight_attempt(1))
        first.kill9()
        assert _row(session_factory, crashing).status in ("parsing", "embedding")
        _start(procs, tmp_path, durable_env)
        doc = _wait(session_factory, crashing, lambda d: d.status in ("ready", "failed"))
        assert (doc.status, doc.attempts, doc.lease_owner) == ("ready", 2, None)
        assert doc.chunks and doc.chunks > 10

    def test_a_document_that_kills_every_attempt_fails_with_a_reason(
        self,
        durable_env: dict[str, str],
        procs: list[LibraryProcess],
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        owner = make_user(session_factory, unique)
        marker = f"secret{unique}"
        doc_id = _stored_document(
            session_factory,
            files_dir,
            hostile_pdfs.text_pdf(tmp_path / "killer.pdf", marker=marker),
            owner,
        )
        for attempt in range(1, MAX_ATTEMPTS + 1):
            proc = _start(procs, tmp_path, durable_env)
            _wait(session_factory, doc_id, _in_flight_attempt(attempt))
            proc.kill9()  # the worker dies with the document, as an OOM kill would
        last = _start(procs, tmp_path, durable_env)
        doc = _wait(session_factory, doc_id, lambda d: d.status in ("ready", "failed"))
        assert doc.status == "failed" and doc.attempts == MAX_ATTEMPTS
        assert f"stopped {MAX_ATTEMPTS} times" in str(doc.error)
        log = last.log()
        assert f"document {doc_id} failed after {MAX_ATTEMPTS} attempts" in log
        assert marker not in log  # ids in the log, never the document's text


class TestQueuedWhileLibraryDown:
    def test_upload_accepted_while_library_down_then_ingested(
        self,
        durable_env: dict[str, str],
        procs: list[LibraryProcess],
        files_dir: Path,
        isolated_redis_url: str,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
    ) -> None:
        with session_factory() as db, db.begin():
            _, key = user_with_key(db, new_email("down"))
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "down.pdf")
        with api_client(
            library_url="http://127.0.0.1:9", files_dir=files_dir, redis_url=isolated_redis_url
        ) as client:
            with pdf.open("rb") as fh:
                resp = client.post(
                    "/v1/library/documents",
                    headers=bearer(key),
                    files={"file": ("down.pdf", fh, "application/pdf")},
                )
            assert resp.status_code == 202, resp.text
            assert resp.json()["status"] == "queued"
            doc_id = uuid.UUID(resp.json()["id"])
            # Reads do need the library: a clear 503, not a hang or a 500.
            resp = client.get("/v1/library/documents", headers=bearer(key))
            assert resp.status_code == 503
            assert resp.json()["error"]["code"] == "library_unavailable"
        # The sweeper is off: the queued message itself must carry the document.
        _start(procs, tmp_path, {**durable_env, "LEAFLAB_INGEST_SWEEP_INTERVAL_S": "3600"})
        doc = _wait(session_factory, doc_id, lambda d: d.status in ("ready", "failed"))
        assert (doc.status, doc.attempts) == ("ready", 1)
