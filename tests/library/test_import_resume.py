"""A bibliography import survives its library service being killed -9 between
entries: a second service resumes it (the sweeper re-sends it once the lease
lapses) and settles only the entries still pending — those settled before the
crash keep their document and time, and no document is created twice."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Document, LibraryImport, LibraryImportEntry
from tests.fixtures.builders import make_user
from tests.library.api_app import api_client
from tests.library.conftest import LibraryProcess, PdfServer, library_env
from tests.library.imports_helpers import REFS_BIB, serve_arxiv, start_import, wait_import

KILL_AFTER = 4


def _settled(factory: sessionmaker[Session], import_id: str) -> dict[int, tuple[object, object]]:
    with factory() as db:
        rows = db.execute(
            select(
                LibraryImportEntry.ordinal,
                LibraryImportEntry.document_id,
                LibraryImportEntry.settled_at,
            ).where(
                LibraryImportEntry.import_id == uuid.UUID(import_id),
                LibraryImportEntry.state.not_in(("pending", "skipped")),
            )
        ).all()
    return {ordinal: (doc, at) for ordinal, doc, at in rows}


def test_a_killed_import_resumes_without_redoing_settled_entries(
    files_dir: Path,
    pdf_server: PdfServer,
    isolated_redis_url: str,
    session_factory: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    serve_arxiv(pdf_server)
    redis.Redis.from_url(isolated_redis_url).flushdb()
    env = {
        **library_env(files_dir, pdf_server),
        "LEAFLAB_REDIS_URL": isolated_redis_url,
        "LEAFLAB_INGEST_LEASE_TTL_S": "4",
        "LEAFLAB_INGEST_SWEEP_INTERVAL_S": "0.5",
        "LEAFLAB_INGEST_REQUEUE_AFTER_S": "2",
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    doomed = LibraryProcess(
        tmp_path / "a",
        {**env, "LEAFLAB_FAILPOINTS": f"library.import.after_entry=kill@{KILL_AFTER}"},
    )
    survivor: LibraryProcess | None = None
    user = make_user(session_factory)
    try:
        doomed.wait_ready()
        with api_client(
            library_url=doomed.url, files_dir=files_dir, redis_url=isolated_redis_url
        ) as client:
            import_id = start_import(client, user.key, REFS_BIB)
            deadline = time.monotonic() + 120
            while doomed.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert doomed.proc.poll() is not None, "the failpoint never killed the service"
            before = _settled(session_factory, import_id)
            assert len(before) == KILL_AFTER  # killed right after the 4th commit

            survivor = LibraryProcess(tmp_path / "b", env)
            survivor.wait_ready()
            body = wait_import(client, user.key, import_id, timeout_s=180)
        assert body["summary"]["pending"] == 0 and body["summary"]["skipped"] == 2
        after = _settled(session_factory, import_id)
        assert len(after) == 18
        for ordinal, settled in before.items():
            assert after[ordinal] == settled, f"entry {ordinal} was settled again"
        with session_factory() as db:
            job = db.get(LibraryImport, uuid.UUID(import_id))
            assert job is not None and job.attempts == 2
            docs = db.scalar(
                select(func.count()).select_from(Document).where(Document.owner_id == user.id)
            )
        assert docs == 17  # 18 entries, one the same DOI as another: no document twice
    finally:
        doomed.stop()
        with contextlib.suppress(ProcessLookupError):  # its parser children, if any
            os.killpg(doomed.proc.pid, signal.SIGKILL)
        if survivor is not None:
            survivor.stop()
