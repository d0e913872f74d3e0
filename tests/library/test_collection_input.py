"""A malformed collection sent to the library service's internal API (a JSON or
multipart upload, a listing or a search filter) is a 422 whose message says what
is wrong, and no document row is written; a well-formed collection the caller may
not write stays a 403; the documents' ``collection`` comes back as the same text."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.models import Document
from tests.library import hostile_pdfs
from tests.library.conftest import LibraryService, PdfServer, make_user

MALFORMED = ["user:not-a-uuid", "eval:scratch", "LAB", "project:../x"]


def _rows(factory: sessionmaker[Session], owner: uuid.UUID) -> int:
    with factory() as db:
        return int(db.scalar(select(func.count()).where(Document.owner_id == owner)) or 0)


def _refused(resp: httpx.Response) -> str:
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_request"
    assert "collection" in error["message"]
    return str(error["message"])


@pytest.mark.parametrize("bad", MALFORMED)
def test_a_malformed_upload_collection_is_422_and_writes_no_row(
    library: LibraryService,
    pdf_server: PdfServer,
    session_factory: sessionmaker[Session],
    unique: str,
    bad: str,
) -> None:
    owner = make_user(session_factory, unique)
    headers = library.headers(owner)
    pdf = hostile_pdfs.theorem_pdf(pdf_server.root / f"collection-{unique}.pdf")
    with httpx.Client(timeout=60) as client:
        by_url = client.post(
            f"{library.url}/documents",
            headers=headers,
            json={"url": pdf_server.url(pdf.name), "collection": bad},
        )
        by_file = client.post(
            f"{library.url}/documents",
            headers=headers,
            files={"file": (pdf.name, pdf.read_bytes(), "application/pdf")},
            data={"collection": bad},
        )
    for resp in (by_url, by_file):
        message = _refused(resp)
        assert bad[:10] in message or "UUID" in message
    assert _rows(session_factory, owner) == 0


def test_listing_and_search_filters_refuse_a_malformed_collection(
    library: LibraryService, session_factory: sessionmaker[Session], unique: str
) -> None:
    owner = make_user(session_factory, unique)
    headers = library.headers(owner)
    mine = Collection.personal(owner)
    with httpx.Client(timeout=60) as client:
        listed = client.get(
            f"{library.url}/documents",
            headers=headers,
            params={"collection": [mine.key, "user:not-a-uuid"]},
        )
        assert "query.collection.1" in _refused(listed)
        found = client.get(
            f"{library.url}/search", headers=headers, params={"q": "x", "collection": "LAB"}
        )
        assert "query.collection" in _refused(found)
        # Well-formed filters still work: the caller's own collection, empty library.
        ok = client.get(f"{library.url}/documents", headers=headers, params={"collection": mine})
        assert ok.status_code == 200 and ok.json() == {"items": []}


def test_a_well_formed_collection_out_of_reach_is_still_403_and_a_good_one_reads_back(
    library: LibraryService,
    pdf_server: PdfServer,
    session_factory: sessionmaker[Session],
    unique: str,
) -> None:
    owner = make_user(session_factory, unique)
    headers = library.headers(owner)
    pdf = hostile_pdfs.theorem_pdf(pdf_server.root / f"collection-ok-{unique}.pdf")
    url = pdf_server.url(pdf.name)
    stranger = Collection.personal(uuid.uuid4())
    with httpx.Client(timeout=60) as client:
        refused = client.post(
            f"{library.url}/documents", headers=headers, json={"url": url, "collection": stranger}
        )
        assert refused.status_code == 403, refused.text
        assert _rows(session_factory, owner) == 0
        mine = Collection.personal(owner)
        accepted = client.post(
            f"{library.url}/documents", headers=headers, json={"url": url, "collection": mine}
        )
        assert accepted.status_code == 202, accepted.text
        got = client.get(f"{library.url}/documents/{accepted.json()['id']}", headers=headers)
    assert got.status_code == 200 and got.json()["collection"] == mine.key
