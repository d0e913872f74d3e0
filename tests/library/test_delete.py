"""DELETE /v1/library/documents/{id} on the real API app over the real library
service: what the owner, a project member, a project owner and an outsider see,
what is left of the document (row, passages in search, stored file), and a
document still being ingested."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.models import Document, Project, ProjectMember
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import LibraryService, wait_terminal


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


def _ready(library: LibraryService, user: uuid.UUID, doc_id: str) -> None:
    with httpx.Client(timeout=30) as raw:
        doc = wait_terminal(raw, library, library.headers(user), doc_id)
    assert doc["status"] == "ready", doc


def _found(client: TestClient, key: str, query: str, mode: str = "keyword") -> set[str]:
    resp = client.get(
        "/v1/library/search", headers=bearer(key), params={"q": query, "mode": mode, "k": "50"}
    )
    assert resp.status_code == 200, resp.text
    return {hit["document_id"] for hit in resp.json()["items"]}


def _stored(files_dir: Path, pdf: Path) -> Path:
    key = hashlib.sha256(pdf.read_bytes()).hexdigest()
    return files_dir / key[:2] / f"{key}.pdf"


class TestOwnerDeletes:
    def test_the_document_leaves_search_the_list_and_the_file_store(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        """Two of the owner's papers match; one is deleted: search (keyword and
        vector) returns only the other, GET and a second DELETE say 404, the row
        is gone. Another user holds the same file: it stays until theirs goes too."""
        marker = f"zorblax{unique}"
        with session_factory() as db, db.begin():
            owner, key = user_with_key(db, new_email("owner"))
            other, other_key = user_with_key(db, new_email("other"))
        doomed_pdf = hostile_pdfs.text_pdf(tmp_path / "doomed.pdf", pages=1, marker=marker)
        kept_pdf = hostile_pdfs.text_pdf(tmp_path / "kept.pdf", pages=2, marker=marker)
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            doomed, kept = _upload(client, key, doomed_pdf), _upload(client, key, kept_pdf)
            shared = _upload(client, other_key, doomed_pdf)  # the same file, another library
            for user, ident in ((owner.id, doomed), (owner.id, kept), (other.id, shared)):
                _ready(library, user, ident)
            query = f"{marker} quasi-convex energy estimates"
            assert _found(client, key, query) == {doomed, kept}
            assert _found(client, key, query, "vector") == {doomed, kept}

            resp = client.delete(f"/v1/library/documents/{doomed}", headers=bearer(key))
            assert resp.status_code == 204 and resp.content == b"", resp.text

            assert _found(client, key, query) == {kept}
            assert _found(client, key, query, "vector") == {kept}
            resp = client.get(f"/v1/library/documents/{doomed}", headers=bearer(key))
            assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
            listed = client.get("/v1/library/documents", headers=bearer(key)).json()["items"]
            assert [d["id"] for d in listed] == [kept]
            again = client.delete(f"/v1/library/documents/{doomed}", headers=bearer(key))
            assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
            with session_factory() as db:
                assert db.get(Document, uuid.UUID(doomed)) is None

            # The other library's copy of the same file is untouched, file included.
            assert _found(client, other_key, query) == {shared}
            assert _stored(files_dir, doomed_pdf).is_file()
            resp = client.delete(f"/v1/library/documents/{shared}", headers=bearer(other_key))
            assert resp.status_code == 204, resp.text
            assert not _stored(files_dir, doomed_pdf).exists()  # nobody names it now
            assert _stored(files_dir, kept_pdf).is_file()
            assert _found(client, other_key, query) == set()


class TestWhoMayDelete:
    def test_members_and_outsiders_cannot_a_project_owner_can(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        """Alice's paper in a project: Carol (a member) may read it but gets 403,
        Bob (not in the project) gets 404, and the paper stays searchable; the
        library service refuses them the same way; Dave (the project's owner) deletes it."""
        marker = f"quillet{unique}"
        with session_factory() as db, db.begin():
            alice, alice_key = user_with_key(db, new_email("alice"))
            carol, carol_key = user_with_key(db, new_email("carol"))
            bob, bob_key = user_with_key(db, new_email("bob"))
            dave, dave_key = user_with_key(db, new_email("dave"))
            project = Project(name=f"delete-{unique}")
            db.add(project)
            db.flush()
            for user, role in ((alice, "member"), (carol, "member"), (dave, "owner")):
                db.add(ProjectMember(project_id=project.id, user_id=user.id, role=role))
        pdf = hostile_pdfs.text_pdf(tmp_path / "shared.pdf", pages=1, marker=marker)
        query = f"{marker} energy estimates"
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            doc_id = _upload(client, alice_key, pdf, project=project.name)
            _ready(library, alice.id, doc_id)
            path = f"/v1/library/documents/{doc_id}"

            resp = client.delete(path, headers=bearer(carol_key))
            assert resp.status_code == 403, resp.text
            error = resp.json()["error"]
            assert error["code"] == "forbidden" and "uploader" in error["message"]
            resp = client.delete(path, headers=bearer(bob_key))
            assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
            # Behind the API, the library service decides the same by itself.
            with httpx.Client(timeout=30) as raw:
                direct = raw.delete(
                    f"{library.url}/documents/{doc_id}", headers=library.headers(carol.id)
                )
                assert direct.status_code == 403, direct.text
                direct = raw.delete(
                    f"{library.url}/documents/{doc_id}", headers=library.headers(bob.id)
                )
                assert direct.status_code == 404, direct.text
            assert _found(client, carol_key, query) == {doc_id}
            assert client.get(path, headers=bearer(carol_key)).status_code == 200

            resp = client.delete(path, headers=bearer(dave_key))
            assert resp.status_code == 204, resp.text
            assert _found(client, carol_key, query) == set()
            assert client.get(path, headers=bearer(alice_key)).status_code == 404


class TestRefusals:
    def test_malformed_ids_a_document_being_ingested_and_no_key(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
    ) -> None:
        """A malformed id is a clear 404; a document still in flight is a 409 that
        says why and keeps the row (deleted once it has failed); no key is 401."""
        with session_factory() as db, db.begin():
            user, key = user_with_key(db, new_email("refused"))
            busy = Document(
                collection=Collection.personal(user.id),
                owner_id=user.id,
                content_hash=uuid.uuid4().hex,
                filename="busy.pdf",
                status="parsing",
                lease_owner="a-worker-elsewhere",
            )
            db.add(busy)
            db.flush()
            busy_id = str(busy.id)
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            resp = client.delete("/v1/library/documents/not-a-uuid", headers=bearer(key))
            assert resp.status_code == 404, resp.text
            assert "UUID" in resp.json()["error"]["message"]
            for ident in ("%2E%2E", "00000000-0000-0000-0000-000000000000"):
                resp = client.delete(f"/v1/library/documents/{ident}", headers=bearer(key))
                assert resp.status_code == 404, (ident, resp.text)

            resp = client.delete(f"/v1/library/documents/{busy_id}", headers=bearer(key))
            assert resp.status_code == 409, resp.text
            error = resp.json()["error"]
            assert error["code"] == "document_ingesting"
            assert "being ingested" in error["message"] and "parsing" in error["message"]
            with session_factory() as db:
                assert db.get(Document, uuid.UUID(busy_id)) is not None

            with session_factory() as db, db.begin():
                row = db.scalar(select(Document).where(Document.id == uuid.UUID(busy_id)))
                assert row is not None
                row.status, row.lease_owner, row.error = "failed", None, "gave up"
            resp = client.delete(f"/v1/library/documents/{busy_id}", headers=bearer(key))
            assert resp.status_code == 204, resp.text

            assert client.delete(f"/v1/library/documents/{busy_id}").status_code == 401
