"""Ingestion through the real library service: real PDFs, hostile PDFs, dedupe, URLs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import httpx
import pymupdf
from sqlalchemy.orm import Session, sessionmaker

from services.common.models import Project, ProjectMember
from tests.library import hostile_pdfs
from tests.library.conftest import (
    PDF_DIR,
    LibraryService,
    PdfServer,
    make_user,
    wait_terminal,
)

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
        headers = library.headers(user)
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
        headers = library.headers(user)
        bad = {
            "truncated": (
                hostile_pdfs.truncated_pdf(PDF_DIR / "papermage.pdf", tmp_path / "t.pdf"),
                "truncated",
            ),
            "encrypted": (hostile_pdfs.encrypted_pdf(tmp_path / "e.pdf"), "encrypted"),
            # Killed at the parser's memory cap, or read without inflating the bomb
            # (text-only extraction) and refused as textless: either way, a reason.
            "bomb": (
                hostile_pdfs.flate_bomb_pdf(tmp_path / "b.pdf", 1500),
                ("parser", "no extractable text"),
            ),
            "pages": (hostile_pdfs.many_pages_pdf(tmp_path / "p.pdf"), "too many pages"),
        }
        with httpx.Client(timeout=60) as client:
            ids = {k: _upload(client, library, headers, p)["id"] for k, (p, _) in bad.items()}
            good = _upload(client, library, headers, hostile_pdfs.theorem_pdf(tmp_path / "g.pdf"))
            for key, (_, reason) in bad.items():
                doc = wait_terminal(client, library, headers, ids[key])
                reasons = reason if isinstance(reason, tuple) else (reason,)
                assert doc["status"] == "failed", (key, doc)
                assert any(r in doc["error"] for r in reasons), (key, doc)
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
        pdf_server: PdfServer,
        session_factory: sessionmaker[Session],
        unique: str,
    ) -> None:
        hostile_pdfs.theorem_pdf(pdf_server.root / f"paper-{unique}.pdf")
        owner, other = make_user(session_factory, unique), make_user(session_factory, unique)
        with session_factory() as db, db.begin():
            row = Project(name=f"lib-{unique}")
            db.add(row)
            db.flush()
            db.add(ProjectMember(project_id=row.id, user_id=owner))
            project = f"project:{row.id}"
        owner_h = library.headers(owner)
        # Claiming the project in the old collection header must change nothing.
        other_h = {**library.headers(other), "X-Leaflab-Collections": project}
        with httpx.Client(timeout=60) as client:
            url = pdf_server.url(f"paper-{unique}.pdf")
            resp = client.post(
                f"{library.url}/documents",
                headers=owner_h,
                json={"url": url, "collection": project},
            )
            assert resp.status_code == 202, resp.text
            doc = wait_terminal(client, library, owner_h, resp.json()["id"])
            assert doc["status"] == "ready" and doc["collection"] == project
            for bad_url in (
                "file:///etc/passwd",
                "ftp://127.0.0.1/x.pdf",
                "http://2130706433/",
                "http://example.org/\x00.pdf",
            ):
                resp = client.post(
                    f"{library.url}/documents", headers=owner_h, json={"url": bad_url}
                )
                assert resp.status_code == 400 and resp.json()["error"]["code"] == "url_refused"
            # Loopback outside LEAFLAB_WEB_ALLOW (another port): accepted, then
            # failed by the guard at fetch, with the reason.
            resp = client.post(
                f"{library.url}/documents",
                headers=owner_h,
                json={"url": f"http://localhost:{pdf_server.port + 1}/paper-{unique}.pdf"},
            )
            refused = wait_terminal(client, library, owner_h, resp.json()["id"])
            assert refused["status"] == "failed" and "loopback" in str(refused["error"])

            # Not a member: neither listed, nor readable, nor searchable, nor writable,
            # whatever collection the request names.
            assert (
                client.get(f"{library.url}/documents/{doc['id']}", headers=other_h).status_code
                == 404
            )
            listed = client.get(
                f"{library.url}/documents", headers=other_h, params={"collection": project}
            ).json()["items"]
            assert listed == []
            hits = client.get(
                f"{library.url}/search",
                headers=other_h,
                params={"q": "quasi-convex flows", "collection": project},
            ).json()["items"]
            assert hits == []
            # The member does find it (so the empty answers above are the access rule).
            hits = client.get(
                f"{library.url}/search", headers=owner_h, params={"q": "quasi-convex flows"}
            ).json()["items"]
            assert doc["id"] in [h["document_id"] for h in hits]
            resp = client.post(
                f"{library.url}/documents",
                headers=other_h,
                json={"url": url, "collection": project},
            )
            assert resp.status_code == 403
            resp = client.get(
                f"{library.url}/search", headers={"X-Leaflab-Internal": "nope"}, params={"q": "x"}
            )
            assert resp.status_code == 401
            ghost = library.headers(uuid.uuid4())
            resp = client.get(f"{library.url}/search", headers=ghost, params={"q": "x"})
            assert resp.status_code == 403


class TestBadInput:
    def test_lists_and_objects_where_strings_belong_are_4xx(
        self, library: LibraryService, session_factory: sessionmaker[Session], unique: str
    ) -> None:
        headers = library.headers(make_user(session_factory, unique))
        with httpx.Client(timeout=30) as client:
            for body in (
                {"url": ["http://a/x.pdf"]},
                {"url": {"u": 1}},
                {"url": "http://example.org/x.pdf", "collection": ["user:x"]},
                {"url": "http://example.org/x.pdf", "collection": {"a": 1}},
                ["http://example.org/x.pdf"],
                "http://example.org/x.pdf",
            ):
                resp = client.post(f"{library.url}/documents", headers=headers, json=body)
                assert 400 <= resp.status_code < 500, (body, resp.text)
                assert resp.json()["error"]["code"]
            for params in (
                [("q", "a"), ("q", "b"), ("mode", "mix"), ("mode", "nope")],
                {"q": "x", "k": "many"},
                {"q": ""},
                {"q": "x" * 3000},
            ):
                resp = client.get(f"{library.url}/search", headers=headers, params=params)
                assert 400 <= resp.status_code < 500, (params, resp.text)
