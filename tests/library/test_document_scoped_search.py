"""Search narrowed to named documents (``document=<id>``): inside the store, so a
document's best passages come back however many other documents outrank them,
and never beyond what the caller may read."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Stack
from tests.fixtures.library_services import library_services
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import wait_terminal
from tests.library.test_tables import hyphen_paper, s2orc_tables_page

QUERY = "BC5CDR NER results"


def test_search_narrowed_to_documents(
    stack: Stack,
    tmp_path: Path,
    isolated_redis_url: str,
    session_factory: sessionmaker[Session],
) -> None:
    with session_factory() as db, db.begin():
        alice, alice_key = user_with_key(db, new_email("scoped"))
        bob, bob_key = user_with_key(db, new_email("scoped-other"))
    tables = s2orc_tables_page(tmp_path / "s2orc-p6.pdf")
    hyphens = hyphen_paper(tmp_path / "hy.pdf")
    with (
        library_services(stack, tmp_path, isolated_redis_url) as (_, library),
        api_client(
            library_url=library.url, files_dir=tmp_path / "files", redis_url=isolated_redis_url
        ) as api,
        httpx.Client(timeout=60) as raw,
    ):

        class _Lib:
            url = library.url

        def upload(key: str, user_id: str, pdf: Path) -> str:
            with pdf.open("rb") as fh:
                resp = api.post(
                    "/v1/library/documents",
                    headers=bearer(key),
                    files={"file": (pdf.name, fh, "application/pdf")},
                )
            assert resp.status_code == 202, resp.text
            headers = {"X-Leaflab-Internal": "test-internal-token", "X-Leaflab-User": user_id}
            doc = wait_terminal(raw, _Lib, headers, resp.json()["id"])  # type: ignore[arg-type]
            assert doc["status"] == "ready", doc
            return str(doc["id"])

        table_doc = upload(alice_key, str(alice.id), tables)
        hyphen_doc = upload(alice_key, str(alice.id), hyphens)
        bobs_doc = upload(bob_key, str(bob.id), hyphens)

        def search(**params: object) -> httpx.Response:
            return api.get("/v1/library/search", headers=bearer(alice_key), params=params)

        everything = search(q=QUERY, k=5).json()["items"]
        assert everything and everything[0]["document_id"] == table_doc
        # The hyphenation paper's passages, although every table passage outranks them.
        narrowed = search(q=QUERY, k=5, document=hyphen_doc).json()["items"]
        assert narrowed and {h["document_id"] for h in narrowed} == {hyphen_doc}
        both = search(q=QUERY, k=30, document=[hyphen_doc, table_doc]).json()["items"]
        assert {h["document_id"] for h in both} == {hyphen_doc, table_doc}
        assert search(q=QUERY, kind="table", document=table_doc).json()["items"]
        assert search(q=QUERY, kind="table", document=hyphen_doc).json()["items"] == []
        # Naming someone else's document widens nothing: no passage of it comes back.
        foreign = search(q=QUERY, document=bobs_doc)
        assert foreign.status_code == 200 and foreign.json()["items"] == []

        for bad in ("nope", "1" * 40, ""):
            assert search(q=QUERY, document=bad).status_code == 422, bad
        too_many = [table_doc] * 51
        assert search(q=QUERY, document=too_many).status_code == 422
        # The library service itself: 400 with the reason.
        direct = raw.get(
            f"{library.url}/search",
            headers={"X-Leaflab-Internal": "test-internal-token", "X-Leaflab-User": str(alice.id)},
            params={"q": "x", "document": "not-an-id"},
        )
        assert direct.status_code == 400 and "not a document id" in direct.text
