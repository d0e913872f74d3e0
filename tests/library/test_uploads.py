"""Large uploads through the real API app: streamed to disk under a cap, 413
above it (with or without Content-Length), nothing stored when refused;
private files, safe names, and fakes refused without revealing paths."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Document
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import LibraryService, make_user, wait_terminal

CAP = 21_000_000
DEAD_LIBRARY = "http://127.0.0.1:9"  # uploads must not need the library service


def _stored(files_dir: Path) -> set[Path]:
    return {p for p in files_dir.rglob("*") if p.is_file()}


def _multipart_chunks(name: str, total: int, boundary: str = "leaflabboundary") -> Iterator[bytes]:
    """A multipart body sent chunked (no Content-Length), generated on the fly."""
    yield (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/pdf\r\n\r\n%PDF-1.7\n"
    ).encode()
    block = b"0" * (1 << 20)
    sent = 0
    while sent < total:
        part = block[: min(len(block), total - sent)]
        sent += len(part)
        yield part
    yield f"\r\n--{boundary}--\r\n".encode()


class TestLargeUploads:
    def test_20mb_accepted_cap_plus_one_refused_and_nothing_stored(
        self,
        stack: object,
        files_dir: Path,
        isolated_redis_url: str,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
    ) -> None:
        with session_factory() as db, db.begin():
            user, key = user_with_key(db, new_email("big"))
        big = hostile_pdfs.padded_pdf(tmp_path / "big.pdf", 20_000_000)
        assert big.stat().st_size > 20_000_000
        too_big = tmp_path / "too-big.pdf"
        with too_big.open("wb") as fh:
            fh.write(b"%PDF-1.7\n")
            fh.truncate(CAP + 1)
        try:
            with api_client(
                library_url=DEAD_LIBRARY,
                files_dir=files_dir,
                max_upload_bytes=CAP,
                redis_url=isolated_redis_url,
            ) as client:
                with big.open("rb") as fh:
                    resp = client.post(
                        "/v1/library/documents",
                        headers=bearer(key),
                        files={"file": ("big.pdf", fh, "application/pdf")},
                    )
                assert resp.status_code == 202, resp.text
                assert resp.json()["status"] == "queued"
                before = _stored(files_dir)

                with too_big.open("rb") as fh:
                    resp = client.post(
                        "/v1/library/documents",
                        headers=bearer(key),
                        files={"file": ("too-big.pdf", fh, "application/pdf")},
                    )
                assert resp.status_code == 413, resp.text
                assert resp.json()["error"]["code"] == "too_large"

                resp = client.post(
                    "/v1/library/documents",
                    headers={
                        **bearer(key),
                        "Content-Type": "multipart/form-data; boundary=leaflabboundary",
                    },
                    content=_multipart_chunks("chunked.pdf", CAP + 2_000_000),
                )
                assert resp.status_code == 413, resp.text
                assert resp.json()["error"]["code"] == "too_large"
                assert _stored(files_dir) == before  # no blob, no leftover staging file
            with session_factory() as db:
                rows = db.scalars(select(Document).where(Document.owner_id == user.id)).all()
                assert [(d.filename, d.status) for d in rows] == [("big.pdf", "queued")]
                blob = files_dir / rows[0].content_hash[:2] / f"{rows[0].content_hash}.pdf"
                assert blob.stat().st_size == big.stat().st_size
                assert stat.S_IMODE(blob.stat().st_mode) == 0o600
                assert stat.S_IMODE(blob.parent.stat().st_mode) == 0o700
                assert stat.S_IMODE(files_dir.stat().st_mode) == 0o700
        finally:
            with session_factory() as db, db.begin():  # the queued message then claims nothing
                db.execute(delete(Document).where(Document.owner_id == user.id))


class TestNamesAndFakes:
    def test_names_sanitised_and_fakes_refused_without_paths(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory, unique)
        headers = library.headers(user)
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "t.pdf")
        hostile_name = "../../etc/\x1b[31mpasswd\u202e\x00" + "x" * 300 + ".pdf"
        with httpx.Client(timeout=60) as client:
            resp = client.post(
                f"{library.url}/documents",
                headers=headers,
                files={"file": (hostile_name, pdf.read_bytes(), "application/pdf")},
            )
            assert resp.status_code == 202, resp.text
            doc = wait_terminal(client, library, headers, resp.json()["id"])
            name = str(doc["filename"])
            assert "/" not in name and ".." not in name and len(name) <= 200
            assert all(ch.isprintable() for ch in name) and name.endswith(".pdf")

            resp = client.post(
                f"{library.url}/documents",
                headers=headers,
                files={"file": ("notes.pdf", b"just text, not a PDF", "application/pdf")},
            )
            assert resp.status_code == 415 and resp.json()["error"]["code"] == "not_pdf"
            # Claims the magic bytes but is not a PDF PyMuPDF can open — garbage, or an
            # HTML page that a browser might render from our origin: refused at upload
            # (415), and nothing is registered or left in the store.
            stored = sorted(p.name for p in files_dir.rglob("*") if p.is_file())
            for fake_name, body in (
                ("fake.pdf", b"%PDF-1.7\nnot really " + os.urandom(64)),
                ("page.pdf", b"%PDF-1.4\n<html><script>alert(document.cookie)</script></html>"),
            ):
                resp = client.post(
                    f"{library.url}/documents",
                    headers=headers,
                    files={"file": (fake_name, body, "x/y")},
                )
                assert resp.status_code == 415, resp.text
                error = resp.json()["error"]
                assert error["code"] == "not_pdf" and "cannot open" in error["message"]
                assert str(files_dir) not in resp.text and "/tmp" not in resp.text
            assert sorted(p.name for p in files_dir.rglob("*") if p.is_file()) == stored
            with session_factory() as db:
                count = db.scalar(
                    select(func.count()).select_from(Document).where(Document.owner_id == user)
                )
                assert count == 1
