"""Ingestion through the real library service: real PDFs, hostile PDFs, dedupe, URLs."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import httpx
import pymupdf
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Project
from tests.library import hostile_pdfs
from tests.library.conftest import PDF_DIR, LibraryService, make_user, wait_terminal

# The full set takes minutes of embedding on 2 cores; CI ingests the small ones
# and LEAFLAB_TEST_ALL_PDFS=1 ingests all 11.
SMALL = ["2304.02623v1.pdf", "1903.10676.pdf", "test-uu.pdf"]


def _pdfs() -> list[Path]:
    if os.environ.get("LEAFLAB_TEST_ALL_PDFS") == "1":
        return sorted(PDF_DIR.glob("*.pdf"))
    return [PDF_DIR / n for n in SMALL]


def _upload(client: httpx.Client, lib: LibraryService, headers: dict[str, str], path: Path) -> dict:
    with path.open("rb") as fh:
        resp = client.post(
            f"{lib.url}/documents",
            headers=headers,
            files={"file": (path.name, fh, "application/pdf")},
        )
    assert resp.status_code == 202, resp.text
    return resp.json()


class TestRealPapers:
    def test_every_paper_ready_with_structure_and_page_locators(
        self,
        library: LibraryService,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory, unique)
        headers = library.headers(user, [f"user:{user}"])
        papers = [*_pdfs(), hostile_pdfs.theorem_pdf(tmp_path / "theorem.pdf")]
        with httpx.Client(timeout=60) as client:
            ids = {p.name: _upload(client, library, headers, p)["id"] for p in papers}
            docs = {n: wait_terminal(client, library, headers, i) for n, i in ids.items()}
            for name, doc in docs.items():
                assert doc["status"] == "ready", (name, doc["error"])
                assert doc["pages"] and doc["chunks"]
            sections = [s["path"] for s in docs["2304.02623v1.pdf"]["structure"]["sections"]]
            assert "1 INTRODUCTION" in sections and "REFERENCES" in sections
            theorem = docs["theorem.pdf"]["structure"]
            assert [e["label"] for e in theorem["environments"]] == ["Theorem 1", "Proof"]
            assert theorem["equations"][0]["label"] == "(1)"

            # A phrase from page 2 finds page 2 of that paper.
            page_text = pymupdf.open(PDF_DIR / "2304.02623v1.pdf")[1].get_text()
            phrase = " ".join(page_text.split()[60:80])
            items = client.get(
                f"{library.url}/search", headers=headers, params={"q": phrase, "mode": "mix"}
            ).json()["items"]
            top = items[0]
            assert top["document_id"] == ids["2304.02623v1.pdf"]
            assert top["page"] == 2 and top["locator"].endswith("p. 2")

            items = client.get(
                f"{library.url}/search",
                headers=headers,
                params={"q": "quasi-convex flow converges theorem", "mode": "derive"},
            ).json()["items"]
            assert "Theorem 1" in items[0]["locator"] or "Theorem 1" in items[1]["locator"]

            # Same bytes again: deduplicated, nothing re-ingested.
            again = _upload(client, library, headers, PDF_DIR / "test-uu.pdf")
            assert again == {"id": ids["test-uu.pdf"], "status": "ready", "duplicate": True}


class TestHostileInput:
    def test_bad_pdfs_fail_with_reasons_and_service_keeps_working(
        self,
        library: LibraryService,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory, unique)
        headers = library.headers(user, [f"user:{user}"])
        bad = {
            "truncated": (
                hostile_pdfs.truncated_pdf(PDF_DIR / "papermage.pdf", tmp_path / "t.pdf"),
                "truncated",
            ),
            "encrypted": (hostile_pdfs.encrypted_pdf(tmp_path / "e.pdf"), "encrypted"),
            "bomb": (hostile_pdfs.flate_bomb_pdf(tmp_path / "b.pdf", 1500), "parser"),
            "pages": (hostile_pdfs.many_pages_pdf(tmp_path / "p.pdf"), "too many pages"),
        }
        with httpx.Client(timeout=60) as client:
            ids = {k: _upload(client, library, headers, p)["id"] for k, (p, _) in bad.items()}
            good = _upload(client, library, headers, hostile_pdfs.theorem_pdf(tmp_path / "g.pdf"))
            for key, (_, reason) in bad.items():
                doc = wait_terminal(client, library, headers, ids[key])
                assert doc["status"] == "failed" and reason in doc["error"], (key, doc)
            assert wait_terminal(client, library, headers, good["id"])["status"] == "ready"

            fake = tmp_path / "notes.pdf"
            fake.write_text("just some text, not a PDF")
            with fake.open("rb") as fh:
                resp = client.post(
                    f"{library.url}/documents",
                    headers=headers,
                    files={"file": ("notes.pdf", fh, "application/pdf")},
                )
            assert resp.status_code == 415
            assert resp.json()["error"]["code"] == "not_pdf"
            assert client.get(f"{library.url}/healthz").status_code == 200


class TestUrlsAndAccess:
    def test_url_ingest_ssrf_guard_and_collection_isolation(
        self,
        library: LibraryService,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        hostile_pdfs.theorem_pdf(tmp_path / "paper.pdf")
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        owner, other = make_user(session_factory, unique), make_user(session_factory, unique)
        with session_factory() as db, db.begin():
            row = Project(name=f"lib-{unique}")
            db.add(row)
            db.flush()
            project = f"project:{row.id}"
        owner_h = library.headers(owner, [f"user:{owner}", project])
        other_h = library.headers(other, [f"user:{other}"])
        try:
            with httpx.Client(timeout=60) as client:
                url = f"http://127.0.0.1:{server.server_port}/paper.pdf"
                resp = client.post(
                    f"{library.url}/documents",
                    headers=owner_h,
                    json={"url": url, "collection": project},
                )
                assert resp.status_code == 202, resp.text
                doc = wait_terminal(client, library, owner_h, resp.json()["id"])
                assert doc["status"] == "ready" and doc["collection"] == project
                for bad_url in ("file:///etc/passwd", "ftp://127.0.0.1/x.pdf"):
                    resp = client.post(
                        f"{library.url}/documents", headers=owner_h, json={"url": bad_url}
                    )
                    assert resp.status_code == 400 and resp.json()["error"]["code"] == "url_refused"
                # Not a member: neither listed, nor readable, nor searchable, nor writable.
                assert (
                    client.get(f"{library.url}/documents/{doc['id']}", headers=other_h).status_code
                    == 404
                )
                listed = client.get(f"{library.url}/documents", headers=other_h).json()["items"]
                assert doc["id"] not in [d["id"] for d in listed]
                hits = client.get(
                    f"{library.url}/search", headers=other_h, params={"q": "quasi-convex flows"}
                ).json()["items"]
                assert all(h["document_id"] != doc["id"] for h in hits)
                resp = client.post(
                    f"{library.url}/documents",
                    headers=other_h,
                    json={"url": url, "collection": project},
                )
                assert resp.status_code == 403
                assert (
                    client.get(
                        f"{library.url}/search",
                        headers={"X-Leaflab-Internal": "nope"},
                        params={"q": "x"},
                    ).status_code
                    == 401
                )
        finally:
            server.shutdown()
