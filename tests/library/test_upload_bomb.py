"""The upload check and a hostile PDF: a ~200 KB file whose cross-reference
streams declare millions of objects takes 1.4 GB merely to open — which is all
the check does. The API opens it in a limited child, never in its own process:
the upload is refused cleanly (422, a reason, no 500), nothing is stored, the
API process's memory stays flat, and the next upload is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Document
from tests.fixtures.rss import peak_rss_growth
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.worker.tools.web.test_pdf_fetch_bomb import parse_children

DEAD_LIBRARY = "http://127.0.0.1:9"  # uploads must not need the library service


def test_the_api_refuses_an_open_bomb_and_stays_small(
    stack: object,
    files_dir: Path,
    isolated_redis_url: str,
    session_factory: sessionmaker[Session],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEAFLAB_PDF_CHILD_MEMORY_MB", "512")
    with session_factory() as db, db.begin():
        user, key = user_with_key(db, new_email("bomb"))
    bomb = hostile_pdfs.xref_bomb_pdf(tmp_path / "bomb.pdf")
    paper = hostile_pdfs.theorem_pdf(tmp_path / "paper.pdf")
    stored = {p for p in files_dir.rglob("*") if p.is_file()}
    try:
        with api_client(
            library_url=DEAD_LIBRARY, files_dir=files_dir, redis_url=isolated_redis_url
        ) as client:
            with peak_rss_growth() as growth:
                resp = client.post(
                    "/v1/library/documents",
                    headers=bearer(key),
                    files={"file": ("bomb.pdf", bomb.read_bytes(), "application/pdf")},
                )
            assert resp.status_code == 422, resp.text
            error = resp.json()["error"]
            assert error["code"] == "pdf_rejected"
            assert "exceeded the parser memory limit (512 MiB)" in error["message"]
            assert str(files_dir) not in resp.text and str(tmp_path) not in resp.text
            # Opened in the API process, the check took it past 1.4 GB.
            assert growth.grew_mb < 150, f"API RSS grew {growth.grew_mb:.0f} MiB"
            assert parse_children() == []
            assert {p for p in files_dir.rglob("*") if p.is_file()} == stored

            resp = client.post(
                "/v1/library/documents",
                headers=bearer(key),
                files={"file": ("paper.pdf", paper.read_bytes(), "application/pdf")},
            )
            assert resp.status_code == 202, resp.text
        with session_factory() as db:
            rows = db.scalars(select(Document.filename).where(Document.owner_id == user.id)).all()
        assert list(rows) == ["paper.pdf"]
    finally:
        with session_factory() as db, db.begin():  # the queued message then claims nothing
            db.execute(delete(Document).where(Document.owner_id == user.id))
