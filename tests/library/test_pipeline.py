"""Ingestion pipeline guarantees on real processes and a real Postgres:
chunk vectors are computed once per text (a worker killed -9 mid-embedding is
retried by another and re-embeds nothing already stored), and progress arrives
per document and per batch on the document's events stream."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.cli.ingest_progress import Upload, follow, local_pages
from services.common.contracts.collections import Collection
from services.common.contracts.keys import document_stream
from services.common.documents.admission import register_document
from services.common.documents.blobs import BlobStore
from services.common.events import decode_entry
from services.common.models import Document, EmbeddingCacheEntry
from services.library.embedding import Embedder, HashCachedEmbedder
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import (
    PDF_DIR,
    LibraryProcess,
    LibraryService,
    PdfServer,
    library_env,
    make_user,
)


class CountingEmbedder(Embedder):
    """A deterministic stand-in model (hash-seeded vectors) that counts its calls."""

    backend = "counting"

    @property
    def dimension(self) -> int:
        return 8

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).random(8) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _cache_rows(factory: sessionmaker[Session], since: object | None = None) -> int:
    with factory() as db:
        query = select(func.count()).select_from(EmbeddingCacheEntry)
        if since is not None:
            query = query.where(EmbeddingCacheEntry.created_at >= since)
        return int(db.execute(query).scalar_one())


def _db_now(factory: sessionmaker[Session]) -> object:
    with factory() as db:
        return db.execute(select(func.now())).scalar_one()


class TestHashCache:
    def test_a_text_is_embedded_once_per_model_across_calls_and_instances(
        self, session_factory: sessionmaker[Session], unique: str
    ) -> None:
        texts = [f"{unique} chunk {i}" for i in range(10)]
        first = HashCachedEmbedder(CountingEmbedder(model=f"m-{unique}"), session_factory)
        a, computed = first.encode_counted(texts[:6])
        assert computed == 6 and first.inner.computed == 6
        # Another process (a fresh instance) and another collection's overlap:
        second = HashCachedEmbedder(CountingEmbedder(model=f"m-{unique}"), session_factory)
        b, computed = second.encode_counted(texts)
        assert computed == 4 and second.inner.computed == 4 and second.reused == 6
        assert np.allclose(a, b[:6])
        # Another model never reuses these vectors.
        other = HashCachedEmbedder(CountingEmbedder(model=f"other-{unique}"), session_factory)
        assert other.encode_counted(texts[:3])[1] == 3


@pytest.fixture
def pipeline_env(files_dir: Path, pdf_server: PdfServer, isolated_redis_url: str) -> dict[str, str]:
    """Fast leases and sweeps on a Redis db of its own; small embedding batches
    so a document is stored in many steps a crash can fall between."""
    redis.Redis.from_url(isolated_redis_url).flushdb()
    return {
        **library_env(files_dir, pdf_server),
        "LEAFLAB_REDIS_URL": isolated_redis_url,
        "LEAFLAB_INGEST_LEASE_TTL_S": "6",
        "LEAFLAB_INGEST_SWEEP_INTERVAL_S": "0.5",
        "LEAFLAB_INGEST_REQUEUE_AFTER_S": "2",
        "LEAFLAB_EMBEDDING_BATCH_SIZE": "2",
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


def _document(factory: sessionmaker[Session], doc_id: uuid.UUID) -> Document:
    with factory() as db:
        doc = db.get(Document, doc_id)
        assert doc is not None
        db.expunge(doc)
        return doc


def _stored_document(
    factory: sessionmaker[Session], files_dir: Path, pdf: Path, owner: uuid.UUID
) -> uuid.UUID:
    """A stored, queued document whose message was never sent (the sweeper sends it)."""
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


def _events(redis_url: str, doc_id: uuid.UUID) -> list[dict[str, object]]:
    raw = redis.Redis.from_url(redis_url).xrange(document_stream(str(doc_id)))
    return [decode_entry(entry_id, fields) for entry_id, fields in raw]


class TestCrashResume:
    def test_reingest_after_kill9_reembeds_nothing_already_stored(
        self,
        pipeline_env: dict[str, str],
        procs: list[LibraryProcess],
        files_dir: Path,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        unique: str,
        tmp_path: Path,
    ) -> None:
        owner = make_user(session_factory, unique)
        pdf = hostile_pdfs.text_pdf(tmp_path / "long.pdf", pages=80, marker=f"r{unique}")
        doc_id = _stored_document(session_factory, files_dir, pdf, owner)
        since = _db_now(session_factory)
        first = _start(procs, tmp_path, pipeline_env)

        deadline = time.monotonic() + 300
        while _cache_rows(session_factory, since) < 8:  # a few batches stored
            assert time.monotonic() < deadline, first.log()[-3000:]
            time.sleep(0.02)
        first.kill9()
        stored_at_crash = _cache_rows(session_factory, since)
        assert _document(session_factory, doc_id).status == "embedding"

        second = _start(procs, tmp_path, pipeline_env)
        deadline = time.monotonic() + 300
        while (doc := _document(session_factory, doc_id)).status not in ("ready", "failed"):
            assert time.monotonic() < deadline, second.log()[-3000:]
            time.sleep(0.1)
        assert (doc.status, doc.attempts) == ("ready", 2)
        assert doc.chunks is not None and doc.chunks > stored_at_crash

        events = _events(isolated_redis_url, doc_id)
        ready = [e["data"] for e in events if e["type"] == "document.ready"]
        assert len(ready) == 1, events
        chunks, embedded, reused = (int(ready[0][k]) for k in ("chunks", "embedded", "reused"))  # type: ignore[index]
        after = _cache_rows(session_factory, since)
        # Every text the retry ran through the model was new to the cache, and
        # every text stored before the crash came back from it.
        assert embedded == after - stored_at_crash
        assert reused == stored_at_crash
        assert chunks == doc.chunks == after

        # The retry's progress: parsed, one event per stored batch, ready.
        last_parsed = max(i for i, e in enumerate(events) if e["type"] == "document.parsed")
        batches = [e["data"] for e in events[last_parsed:] if e["type"] == "document.batch"]
        done = [b["done"] for b in batches]  # type: ignore[index]
        assert len(batches) == -(-chunks // 4)  # batches of 2 × embedding batch size
        assert done == sorted(done) and done[-1] == chunks
        assert all(b["total"] == chunks for b in batches)  # type: ignore[index]


class TestIngestProgressCli:
    def test_follow_reports_each_document_with_rate_and_eta(
        self,
        library: LibraryService,
        session_factory: sessionmaker[Session],
        files_dir: Path,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """What `leaflab library ingest` prints when not on a terminal; the
        rich bar (terminal) runs the same loop."""
        with session_factory() as db, db.begin():
            _, key = user_with_key(db, new_email("cli"))
        good = hostile_pdfs.theorem_pdf(tmp_path / "good.pdf")
        # Opens (the upload is accepted) but has no readable page: fails in ingestion.
        broken = hostile_pdfs.truncated_pdf(PDF_DIR / "papermage.pdf", tmp_path / "broken.pdf")
        uploads = []
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            for pdf in (good, broken):
                with pdf.open("rb") as fh:
                    resp = client.post(
                        "/v1/library/documents",
                        headers=bearer(key),
                        files={"file": (pdf.name, fh, "application/pdf")},
                    )
                assert resp.status_code == 202, resp.text
                uploads.append(Upload(pdf, resp.json()["id"], local_pages(pdf)))
            failed = follow(client, "", bearer(key), uploads, interactive=False, poll_s=0.2)
            assert failed == 1
            follow(client, "", bearer(key), uploads[:1], interactive=True, timeout_s=60)
        lines = capsys.readouterr().out.splitlines()
        by_file = {line.split(": ", 1)[0]: line for line in lines if ": " in line}
        assert re.search(r"ready \(\d+ pages, \d+ chunks\)", by_file[str(good)])
        assert "failed: " in by_file[str(broken)]
        assert all(re.search(r"pages/s, ETA", by_file[str(p)]) for p in (good, broken))
