"""The public /v1/library routes of the real API app over the real library service."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.api.library.client import internal_path
from services.common.contracts.errors import ServiceError
from services.common.models import Document, Project, ProjectMember
from tests.fixtures.hostile_urls import MALFORMED_URLS
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import LibraryService, wait_terminal


class TestProjectVisibility:
    def test_project_documents_invisible_to_non_members(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        with session_factory() as db, db.begin():
            member, member_key = user_with_key(db, new_email("m"))
            _, outsider_key = user_with_key(db, new_email("o"))
            project = Project(name=f"optics-{unique}")
            db.add(project)
            db.flush()
            db.add(ProjectMember(project_id=project.id, user_id=member.id))
        as_member, as_outsider = bearer(member_key), bearer(outsider_key)
        pdf = hostile_pdfs.theorem_pdf(tmp_path / "optics.pdf")
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            with pdf.open("rb") as fh:
                resp = client.post(
                    "/v1/library/documents",
                    headers=as_member,
                    files={"file": ("optics.pdf", fh, "application/pdf")},
                    data={"project": f"optics-{unique}"},
                )
            assert resp.status_code == 202, resp.text
            doc_id = resp.json()["id"]
            with httpx.Client(timeout=30) as raw:
                doc = wait_terminal(raw, library, library.headers(member.id), doc_id)
                assert doc["status"] == "ready", doc

            listed = client.get("/v1/library/documents", headers=as_member).json()["items"]
            assert doc_id in [d["id"] for d in listed]
            # The stored paper is served as nothing but a PDF: no sniffing, no script.
            served = client.get(f"/v1/library/documents/{doc_id}/pdf", headers=as_member)
            assert served.status_code == 200 and served.content == pdf.read_bytes()
            assert served.headers["content-type"] == "application/pdf"
            assert served.headers["x-content-type-options"] == "nosniff"
            csp = served.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src 'none'" in csp
            hits = client.get(
                "/v1/library/search",
                headers=as_member,
                params={"q": "quasi-convex flows", "project": f"optics-{unique}"},
            ).json()
            assert hits["items"][0]["document_id"] == doc_id

            assert (
                client.get(f"/v1/library/documents/{doc_id}", headers=as_outsider).status_code
                == 404
            )
            listed = client.get("/v1/library/documents", headers=as_outsider).json()["items"]
            assert doc_id not in [d["id"] for d in listed]
            hits = client.get(
                "/v1/library/search", headers=as_outsider, params={"q": "quasi-convex flows"}
            ).json()["items"]
            assert doc_id not in [h["document_id"] for h in hits]
            resp = client.get(
                "/v1/library/search",
                headers=as_outsider,
                params={"q": "x", "project": f"optics-{unique}"},
            )
            assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
            assert client.get("/v1/library/documents").status_code == 401
            resp = client.get(
                "/v1/library/search", headers=as_member, params={"q": "x", "mode": "bogus"}
            )
            # The API validates the mode against its declared enum before the library.
            assert resp.status_code == 422 and resp.json()["error"]["code"] == "invalid_request"

            # Dot segments, raw or percent-encoded, never reach another internal route.
            for path in (
                "/v1/library/documents/%2E%2E",
                "/v1/library/documents/..",
                "/v1/library/documents/%2e%2e%2fsearch",
                "/v1/library/documents/%2E%2E%2F%2E%2E%2Fhealthz",
                "/v1/library/documents/..%2Fsearch%3Fq%3Dflows",
                "/v1/library/documents/%2E",
            ):
                resp = client.get(path, headers=as_member)
                assert resp.status_code == 404, (path, resp.text)
                assert "items" not in resp.json() and "chunks" not in resp.json()

            # A project given as a list or object, or a URL with a NUL: 4xx, not 500.
            for body in (
                {"url": "http://example.org/x.pdf", "project": ["a"]},
                {"url": "http://example.org/x.pdf", "project": {"a": 1}},
                {"url": ["http://example.org/x.pdf"]},
                {"url": "http://example.org/\x00.pdf"},
            ):
                resp = client.post("/v1/library/documents", headers=as_member, json=body)
                assert resp.status_code == 400, resp.text

            # Every /v1/library route's success response is a named schema.
            paths = client.get("/openapi.json").json()["paths"]
            for path, methods in paths.items():
                if not path.startswith("/v1/library"):
                    continue
                for method, op in methods.items():
                    if method == "delete":  # an empty 204, nothing else succeeds
                        assert [s for s in op["responses"] if s < "300"] == ["204"], op
                        assert "content" not in op["responses"]["204"], op
                        continue
                    ok = op["responses"].get("200") or op["responses"].get("202")
                    if path.endswith("/events"):  # Server-Sent Events, not JSON
                        assert list(ok["content"]) == ["text/event-stream"], (path, ok)
                        continue
                    if path.endswith("/pdf"):  # the stored paper itself
                        assert "application/pdf" in ok["content"], (path, ok)
                        continue
                    if path.endswith(".bib"):  # a collection exported as BibTeX
                        assert list(ok["content"]) == ["application/x-bibtex"], (path, ok)
                        continue
                    ref = ok["content"]["application/json"]["schema"].get("$ref", "")
                    assert ref.startswith("#/components/schemas/Library"), (method, path, ok)


class TestSearchFilter:
    def test_search_keeps_to_the_project_asked_for(
        self,
        library: LibraryService,
        files_dir: Path,
        session_factory: sessionmaker[Session],
        unique: str,
        tmp_path: Path,
    ) -> None:
        """One user's papers in two collections, both matching the query: a search
        for ``project`` returns only that project's, the unfiltered one both — so a
        filter that is dropped on the way cannot go unnoticed."""
        with session_factory() as db, db.begin():
            member, key = user_with_key(db, new_email("s"))
            project = Project(name=f"filter-{unique}")
            db.add(project)
            db.flush()
            db.add(ProjectMember(project_id=project.id, user_id=member.id))
        ids = {}
        with api_client(library_url=library.url, files_dir=files_dir) as client:
            for where, marker in (("", "personal"), (project.name, "shared")):
                pdf = hostile_pdfs.text_pdf(tmp_path / f"{marker}.pdf", pages=2, marker=marker)
                with pdf.open("rb") as fh:
                    resp = client.post(
                        "/v1/library/documents",
                        headers=bearer(key),
                        files={"file": (pdf.name, fh, "application/pdf")},
                        data={"project": where} if where else {},
                    )
                assert resp.status_code == 202, resp.text
                ids[marker] = resp.json()["id"]
            with httpx.Client(timeout=30) as raw:
                for ident in ids.values():
                    doc = wait_terminal(raw, library, library.headers(member.id), ident)
                    assert doc["status"] == "ready", doc
            query = {"q": "quasi-convex energy estimates", "k": "20"}

            def found(**params: str) -> set[str]:
                resp = client.get(
                    "/v1/library/search", headers=bearer(key), params={**query, **params}
                )
                assert resp.status_code == 200, resp.text
                return {hit["document_id"] for hit in resp.json()["items"]}

            assert found() == set(ids.values())
            assert found(project=project.name) == {ids["shared"]}
            assert found(project=str(project.id)) == {ids["shared"]}
            # The library service narrows by collection the same way.
            with httpx.Client(timeout=30) as raw:
                resp = raw.get(
                    f"{library.url}/search",
                    headers=library.headers(member.id),
                    params={**query, "collection": f"user:{member.id}"},
                )
            assert {h["document_id"] for h in resp.json()["items"]} == {ids["personal"]}


class TestMalformedUrlIngest:
    def test_every_malformed_url_is_a_clear_400_and_registers_nothing(
        self,
        stack: object,
        files_dir: Path,
        session_factory: sessionmaker[Session],
    ) -> None:
        """``http://[zz]/x.pdf`` and its kin: 400 ``invalid_url`` with a reason
        (never a 500), and no document row; a non-canonical IPv4 host spelling is
        the guard's 400 ``url_refused`` at once. No library service is contacted."""
        with session_factory() as db, db.begin():
            _, key = user_with_key(db, new_email("u"))
        with session_factory() as db:
            before = db.scalar(select(func.count()).select_from(Document))
        with api_client(library_url="http://127.0.0.1:9", files_dir=files_dir) as client:
            headers = {**bearer(key), "Content-Type": "application/json"}
            for url in MALFORMED_URLS:
                # json.dumps escapes a lone surrogate (\udcff), as a hostile client may send it.
                body = json.dumps({"url": url})
                resp = client.post("/v1/library/documents", headers=headers, content=body)
                where = f"{url[:80]!r} -> {resp.status_code}: {resp.text[:200]}"
                assert resp.status_code == 400, where
                error = resp.json()["error"]
                assert error["code"] == "invalid_url" and error["message"], where
            for url in ("http://2130706433/x.pdf", "http://[::1%25lo]/x.pdf"):
                resp = client.post("/v1/library/documents", headers=bearer(key), json={"url": url})
                assert resp.status_code == 400, resp.text
                assert resp.json()["error"]["code"] == "url_refused", resp.text
        with session_factory() as db:
            assert db.scalar(select(func.count()).select_from(Document)) == before


class TestInternalPaths:
    @pytest.mark.parametrize("segment", ["..", ".", "", "a/b", "..\\x", "x?y", "x#y", "%2E%2E"])
    def test_segments_that_could_walk_elsewhere_are_refused(self, segment: str) -> None:
        with pytest.raises(ServiceError) as info:
            internal_path("documents", segment)
        assert info.value.status == 404

    def test_plain_segments_pass(self) -> None:
        doc = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
        assert internal_path("documents", doc) == f"/documents/{doc}"
