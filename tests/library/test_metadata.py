"""Document metadata through the real API app and library service: what ingestion
extracts from the shared PDFs (authors, year, venue, DOI, arXiv id, each with its
source), PATCH /v1/library/documents/{id} (who may, what is refused), a manual
correction surviving a re-ingest, and DOI duplicates marked within what the
uploader can read."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.contracts.tasks import LIBRARY_INGEST_TASK, LIBRARY_QUEUE
from services.common.models import Document
from services.common.settings import get_settings
from tests.fixtures.builders import make_project, make_user
from tests.library.api_app import api_client, bearer
from tests.library.conftest import PDF_DIR, LibraryService, wait_terminal
from tests.library.test_references import paper_pdf

CITESEE = "2302.07302v1.pdf"


def _upload(client: TestClient, key: str, pdf: Path, project: str | None = None) -> str:
    with pdf.open("rb") as fh:
        resp = client.post(
            "/v1/library/documents",
            headers=bearer(key),
            files={"file": (pdf.name, fh, "application/pdf")},
            data={"project": project} if project else {},
        )
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def _ready(library: LibraryService, user: uuid.UUID, doc_id: str) -> dict[str, Any]:
    with httpx.Client(timeout=30) as raw:
        doc = wait_terminal(raw, library, library.headers(user), doc_id)
    assert doc["status"] == "ready", doc
    return doc


def _get(client: TestClient, key: str, doc_id: str) -> dict[str, Any]:
    resp = client.get(f"/v1/library/documents/{doc_id}", headers=bearer(key))
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _patch(client: TestClient, key: str, doc_id: str, body: Any) -> httpx.Response:
    return client.patch(f"/v1/library/documents/{doc_id}", headers=bearer(key), json=body)


def test_shared_pdfs_get_authors_year_venue_and_identifiers(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    """Three shared papers, three ways: the PDF's author field (S2ORC), page 1's
    layout (CiteSee, LongEval), identifiers and venue from the text."""
    user = make_user(session_factory)
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        ids = {
            name: _upload(client, user.key, PDF_DIR / name)
            for name in (CITESEE, "2020.acl-main.447.pdf", "2023.eacl-main.121.pdf")
        }
        for ident in ids.values():
            _ready(library, user.id, ident)
        cite = _get(client, user.key, ids[CITESEE])
        assert cite["authors"][:3] == ["Joseph Chee Chang", "Amy X. Zhang", "Jonathan Bragg"]
        assert "Daniel S. Weld" in cite["authors"]
        assert cite["year"] == 2023
        assert cite["doi"] == "10.1145/3544548.3580847"
        assert cite["arxiv_id"] == "2302.07302"
        assert cite["venue"].startswith("Proceedings of the 2023 CHI Conference")
        assert cite["metadata_source"]["authors"] == "layout"
        assert cite["metadata_source"]["doi"] == "text"
        assert cite["duplicate_of"] is None

        s2orc = _get(client, user.key, ids["2020.acl-main.447.pdf"])
        assert s2orc["authors"] == [
            "Kyle Lo",
            "Lucy Lu Wang",
            "Mark Neumann",
            "Rodney Kinney",
            "Daniel Weld",
        ]
        assert s2orc["metadata_source"]["authors"] == "pdf"
        assert s2orc["year"] == 2020 and "Computational Linguistics" in s2orc["venue"]

        longeval = _get(client, user.key, ids["2023.eacl-main.121.pdf"])
        # A title set on two lines of slightly different sizes is read whole.
        assert longeval["title"].startswith("LONGEVAL: Guidelines for Human Evaluation of")
        assert longeval["authors"][0] == "Kalpesh Krishna" and len(longeval["authors"]) == 7
        listed = client.get("/v1/library/documents", headers=bearer(user.key)).json()["items"]
        row = next(d for d in listed if d["id"] == ids[CITESEE])
        assert row["authors"] == cite["authors"] and row["year"] == 2023


def test_patch_corrects_metadata_only_for_who_may_delete_and_refuses_bad_input(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    owner, member, stranger = (make_user(session_factory) for _ in range(3))
    project = make_project(session_factory, owner, member)
    pdf = paper_pdf(
        tmp_path / "patched.pdf",
        title=f"Patched Paper {uuid.uuid4().hex[:6]}",
        doi=None,
        references=[],
    )
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        ident = _upload(client, owner.key, pdf, project=project)
        _ready(library, owner.id, ident)
        fix = {"authors": ["Ada Lovelace", "Charles Babbage"], "year": 1843, "doi": "10.1234/ABC.5"}
        # Someone outside the project: the same 404 as a missing document.
        resp = _patch(client, stranger.key, ident, fix)
        assert resp.status_code == 404, resp.text
        # A project member who did not upload it may read it, not change it.
        resp = _patch(client, member.key, ident, fix)
        assert resp.status_code == 403, resp.text
        assert "uploader" in resp.json()["error"]["message"]
        assert _get(client, owner.key, ident)["authors"] == []

        bad: list[tuple[Any, int, str]] = [
            ({}, 400, "at least one of"),
            ({"doi": "not-a-doi"}, 422, "DOI"),
            ({"arxiv_id": "12345"}, 422, "arXiv"),
            ({"year": 3000}, 422, "year"),
            ({"year": "soon"}, 422, "year"),
            ({"authors": ["Ada", "  "]}, 422, "blank"),
            ({"authors": "Ada Lovelace"}, 422, "authors"),
            ({"authors": ["A B"] * 101}, 422, "authors"),
            ({"title": "x" * 5000}, 422, "title"),
            ({"title": None}, 422, "title"),
            ({"venue": "a\x00b"}, 422, "NUL"),
            ({"owner_id": str(stranger.id)}, 422, "owner_id"),
            ([1, 2], 422, ""),
        ]
        for body, status, said in bad:
            resp = _patch(client, owner.key, ident, body)
            assert resp.status_code == status, (body, resp.text)
            assert said in resp.json()["error"]["message"], (body, resp.text)
        assert _patch(client, owner.key, "not-a-uuid", fix).status_code == 404
        assert _patch(client, owner.key, str(uuid.uuid4()), fix).status_code == 404

        resp = _patch(client, owner.key, ident, {**fix, "arxiv_id": "arXiv:hep-th/9901001v2"})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["authors"] == ["Ada Lovelace", "Charles Babbage"]
        assert body["doi"] == "10.1234/abc.5" and body["arxiv_id"] == "hep-th/9901001"
        assert body["metadata_source"]["authors"] == "manual"
        assert _get(client, member.key, ident)["year"] == 1843  # readers see the correction


def test_manual_correction_survives_reingestion(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    """A corrected author list and year stay after the paper is ingested again;
    the fields nobody corrected are extracted afresh."""
    user = make_user(session_factory)
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        ident = _upload(client, user.key, PDF_DIR / "paperqa-paper.pdf")
        first = _ready(library, user.id, ident)
        assert first["authors"][0] == "Geemi P. Wellawatte"
        resp = _patch(client, user.key, ident, {"authors": ["G. P. Wellawatte"], "year": 2022})
        assert resp.status_code == 200, resp.text
        with session_factory() as db, db.begin():
            db.execute(
                update(Document)
                .where(Document.id == uuid.UUID(ident))
                .values(status="queued", venue="stale", lease_owner=None, lease_until=None)
            )
        build_celery(get_settings()).send_task(
            LIBRARY_INGEST_TASK, args=[ident], queue=LIBRARY_QUEUE, ignore_result=True
        )
        again = _ready(library, user.id, ident)
        doc = _get(client, user.key, ident)
        assert again["attempts"] == 2
        # Extraction reads four authors and 2023 (the PDF's date): the corrections stay.
        assert doc["authors"] == ["G. P. Wellawatte"] and doc["year"] == 2022
        assert doc["metadata_source"]["authors"] == "manual"
        assert doc["venue"] is None  # not manual: re-extracted (this paper prints none)


def test_same_doi_is_marked_duplicate_within_what_the_uploader_reads(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """Two files of one paper (same DOI, different bytes): the second is marked
    duplicate_of the first and stays searchable; another user's copy is not
    marked (their readable collections do not hold the first)."""
    me, other = make_user(session_factory), make_user(session_factory)
    tag = uuid.uuid4().hex[:8]
    doi = f"10.5555/dup.{tag}"
    title = f"Duplicated Study of Zorptic Flows {tag}"
    first_pdf = paper_pdf(
        tmp_path / "a.pdf", title=title, doi=doi, references=["[1] A. B. X. 2020."]
    )
    second_pdf = paper_pdf(tmp_path / "b.pdf", title=title, doi=doi, references=[])
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        first = _upload(client, me.key, first_pdf)
        _ready(library, me.id, first)
        second = _upload(client, me.key, second_pdf)
        theirs = _upload(client, other.key, second_pdf)
        _ready(library, me.id, second)
        _ready(library, other.id, theirs)
        assert _get(client, me.key, first)["duplicate_of"] is None
        dup = _get(client, me.key, second)
        assert dup["doi"] == doi and dup["duplicate_of"] == first
        assert _get(client, other.key, theirs)["duplicate_of"] is None
        hits = client.get(
            "/v1/library/search",
            headers=bearer(me.key),
            params={"q": f"Zorptic Flows {tag}", "mode": "keyword", "k": "50"},
        ).json()["items"]
        assert {first, second} <= {h["document_id"] for h in hits}
