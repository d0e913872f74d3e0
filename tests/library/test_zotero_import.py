"""Zotero imports through the real API app and library service, against a loopback
server answering with recorded Zotero web API v3 pages (tests/fixtures/zotero_server.py):
every page is read (three, following ``Link: rel="next"``), a 429's ``Retry-After``
is waited out, a wrong key is a finished import saying Zotero refused it,
re-importing adds nothing, and the key is in no row and no log line."""

from __future__ import annotations

import logging
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import make_user
from tests.fixtures.zotero_server import (  # noqa: F401 - a fixture
    LIBRARY_ID,
    ZOTERO_KEY,
    ZoteroServer,
    zotero_server,
)
from tests.library.api_app import api_client, bearer
from tests.library.conftest import LibraryService
from tests.library.imports_helpers import by_title, documents, wait_import


def zotero_api(
    library: LibraryService, files_dir: Path, server: ZoteroServer
) -> AbstractContextManager[TestClient]:
    return api_client(
        library_url=library.url,
        files_dir=files_dir,
        intake_overrides={"zotero_url": server.base, "web_allow": server.allow_entry},
    )


def post_zotero(client: TestClient, key: str, zotero: dict[str, Any]) -> Any:
    resp = client.post("/v1/library/imports", headers=bearer(key), json={"zotero": zotero})
    assert resp.status_code == 202, resp.text
    return resp.json()


def stored_import_text(factory: sessionmaker[Session], import_id: str) -> str:
    """Everything Postgres holds for the import: its row and its entries' rows, as JSON."""
    with factory() as db:
        rows = db.execute(
            text(
                "SELECT row_to_json(i)::text FROM library_imports i WHERE id = :id "
                "UNION ALL SELECT row_to_json(e)::text FROM library_import_entries e "
                "WHERE import_id = :id"
            ),
            {"id": uuid.UUID(import_id)},
        ).scalars()
        return "\n".join(rows)


class TestAUserLibrary:
    def test_every_page_is_imported_reimport_adds_nothing_and_the_key_is_kept_nowhere(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            accepted = post_zotero(client, user.key, {"user": LIBRARY_ID, "key": ZOTERO_KEY})
            first = wait_import(client, user.key, accepted["id"])
            assert first["format"] == "zotero" and first["filename"] == f"zotero user {LIBRARY_ID}"
            assert first["total"] == 5 and first["done"] == 5 and first["error"] is None
            assert first["summary"] == {
                "matched": 0,
                "fetched": 0,
                "metadata_only": 5,
                "skipped": 0,
                "pending": 0,
            }
            assert [e["key"] for e in first["entries"]][:2] == ["8QZ4XK2M", "C7T2MWQE"]
            docs = documents(client, user.key)
            assert len(docs) == 5
            sparse = by_title(docs, "Sparse Mixture Routing")
            assert sparse["authors"] == ["Adaeze Okafor", "Henrik Lindqvist"]
            assert sparse["year"] == 2021 and sparse["doi"] == "10.5555/zotero.fixture.0001"
            assert by_title(docs, "Metadata-Only Libraries")["year"] == 2018

            again = wait_import(
                client,
                user.key,
                post_zotero(client, user.key, {"user": str(LIBRARY_ID), "key": ZOTERO_KEY})["id"],
            )
            assert again["summary"]["matched"] == 5 and again["total"] == 5
            assert len(documents(client, user.key)) == 5

        # Three pages, each asked for with the key in the header and never in the URL.
        pages = [s for s in zotero_server.seen if s.status == 200]
        assert [s.query.get("start") for s in pages[:3]] == [["0"], ["2"], ["4"]]
        assert all(s.headers.get("zotero-api-version") == "3" for s in pages)
        assert all(s.headers.get("zotero-api-key") == ZOTERO_KEY for s in pages)
        assert all(s.query.get("format") == ["csljson"] for s in pages)
        assert all(ZOTERO_KEY not in repr(s.query) for s in zotero_server.seen)
        for import_id in (first["id"], again["id"]):
            stored = stored_import_text(session_factory, import_id)
            assert stored and ZOTERO_KEY not in stored
        assert ZOTERO_KEY not in caplog.text
        assert "read zotero user 475071 (5 items in 3 pages)" in caplog.text


class TestZoteroSaysWait:
    def test_a_429_with_retry_after_is_waited_out_and_the_import_completes(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
    ) -> None:
        zotero_server.fail_next(2, [(429, {"Retry-After": "1"})])
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            body = wait_import(
                client,
                user.key,
                post_zotero(client, user.key, {"group": LIBRARY_ID, "key": ZOTERO_KEY})["id"],
            )
        assert body["total"] == 5 and body["error"] is None
        assert body["filename"] == f"zotero group {LIBRARY_ID}"
        page2 = [s for s in zotero_server.seen if s.query.get("start") == ["2"]]
        assert [s.status for s in page2] == [429, 200]
        assert page2[1].at - page2[0].at >= 0.95  # Retry-After: 1 honoured

    def test_a_backoff_header_delays_the_next_page(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
    ) -> None:
        zotero_server.backoff(0, "1")
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            body = post_zotero(client, user.key, {"user": LIBRARY_ID, "key": ZOTERO_KEY})
        assert body["total"] == 5 and body["error"] is None
        first, second = zotero_server.seen[:2]
        assert second.at - first.at >= 0.95  # Backoff: 1 honoured

    def test_a_wait_longer_than_allowed_fails_the_import_saying_so(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
    ) -> None:
        zotero_server.fail_next(0, [(429, {"Retry-After": "3600"})])
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            body = post_zotero(client, user.key, {"user": LIBRARY_ID, "key": ZOTERO_KEY})
        assert body["status"] == "done" and body["total"] == 0
        assert body["error"] == "Zotero answered 429 and asked to wait 3600 s; try again later"


class TestZoteroRefuses:
    def test_a_wrong_key_is_a_failed_import_saying_zotero_refused_it(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG)
        wrong = "WrongKey0000000000000000"
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            body = post_zotero(client, user.key, {"user": LIBRARY_ID, "key": wrong})
            assert body["status"] == "done" and body["total"] == 0
            assert body["error"].startswith("Zotero refused the API key (403 Forbidden)")
            listed = client.get("/v1/library/imports", headers=bearer(user.key)).json()["items"]
            assert listed[0]["id"] == body["id"] and listed[0]["error"] == body["error"]
            missing = post_zotero(client, user.key, {"group": 999, "key": ZOTERO_KEY})
            assert missing["error"] == "Zotero has no group library 999 (404 Not Found)"
        assert wrong not in stored_import_text(session_factory, body["id"])
        assert wrong not in caplog.text

    def test_a_next_link_to_another_origin_is_not_followed_with_the_key(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
    ) -> None:
        # localhost is this same server under another name: were the link followed,
        # the key would reach it (seen) although the origin differs.
        zotero_server.next_origin = f"http://localhost:{zotero_server.port}"
        user = make_user(session_factory)
        overrides = {
            "zotero_url": zotero_server.base,
            "web_allow": f"{zotero_server.allow_entry},localhost:{zotero_server.port}",
        }
        with api_client(
            library_url=library.url, files_dir=files_dir, intake_overrides=overrides
        ) as client:
            body = post_zotero(client, user.key, {"user": LIBRARY_ID, "key": ZOTERO_KEY})
        assert body["total"] == 0
        assert body["error"] == "Zotero's next-page link points elsewhere; refusing to follow it"
        assert len(zotero_server.seen) == 1

    def test_a_malformed_request_is_refused_before_zotero_is_asked(
        self,
        library: LibraryService,
        files_dir: Path,
        zotero_server: ZoteroServer,  # noqa: F811 - the fixture
        session_factory: sessionmaker[Session],
    ) -> None:
        user = make_user(session_factory)
        with zotero_api(library, files_dir, zotero_server) as client:
            for zotero in (
                {"user": LIBRARY_ID, "group": LIBRARY_ID, "key": ZOTERO_KEY},
                {"user": "me", "key": ZOTERO_KEY},
                {"user": LIBRARY_ID, "key": "has spaces and /"},
                {"user": LIBRARY_ID},
            ):
                resp = client.post(
                    "/v1/library/imports", headers=bearer(user.key), json={"zotero": zotero}
                )
                assert resp.status_code == 400, (zotero, resp.text)
                assert "has spaces" not in resp.text
        assert zotero_server.seen == []
