"""The metadata lookup after extraction, through a real library service whose
OpenAlex and Crossref are a loopback server of recorded records
(tests/fixtures/recorded_metadata.py): a DOI fills authors, venue and year from
OpenAlex; Crossref answers where OpenAlex has nothing; a title matches only
exactly; a manual correction outlives a re-ingest with lookup; a retracted paper
is flagged in the documents' JSON; and a lookup that fails (500, not JSON, too
slow, the server gone) leaves the document ready with what extraction found."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.contracts.tasks import LIBRARY_INGEST_TASK, LIBRARY_QUEUE
from services.common.models import Document
from services.common.net_guard import NetGuard, parse_allow_list
from services.common.settings import get_settings
from services.library.metadata.lookup import MetadataLookup, build_lookup
from services.library.settings import LibrarySettings
from tests.fixtures.builders import make_user
from tests.fixtures.recorded_metadata import RecordedMetadata, serve_recorded_metadata
from tests.library.api_app import api_client, bearer
from tests.library.conftest import (
    LibraryProcess,
    LibraryService,
    PdfServer,
    library_env,
    wait_terminal,
)
from tests.library.test_references import paper_pdf

CITESEE_DOI = "10.1145/3544548.3580847"
CITESEE_AUTHORS = [
    "Joseph Chee Chang", "Amy X. Zhang", "Jonathan Bragg", "Andrew Head", "Kyle Lo",
    "Doug Downey", "Daniel S. Weld",
]  # fmt: skip
CHI_2023 = "Proceedings of the 2023 CHI Conference on Human Factors in Computing Systems"
S2ORC_DOI = "10.18653/v1/2020.acl-main.447"
S2ORC_TITLE = "S2ORC: The Semantic Scholar Open Research Corpus"
WAKEFIELD_DOI = "10.1016/s0140-6736(97)11096-0"  # OpenAlex: is_retracted
SURGISPHERE_DOI = "10.1016/s0140-6736(20)31180-6"  # Crossref: updated-by a retraction
# A lookup failure must not hold a document: it is ready well within this.
READY_WITHIN_S = 90


@pytest.fixture(scope="module")
def recorded() -> Iterator[RecordedMetadata]:
    with serve_recorded_metadata() as server:
        yield server


@pytest.fixture(scope="module")
def lookup_proc(
    stack: object,
    files_dir: Path,
    pdf_server: PdfServer,
    isolated_redis_url: str,
    recorded: RecordedMetadata,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LibraryProcess]:
    """A library service of its own (on the isolated Redis db, so the session's
    service never takes these documents) whose lookups go to the recorded server."""
    redis.Redis.from_url(isolated_redis_url).flushdb()
    env = {
        **library_env(files_dir, pdf_server),
        **recorded.env(),
        "LEAFLAB_REDIS_URL": isolated_redis_url,
        "LEAFLAB_WEB_ALLOW": f"127.0.0.1:{pdf_server.port},{recorded.allow_entry}",
    }
    proc = LibraryProcess(tmp_path_factory.mktemp("lookup_library"), env)
    proc.wait_ready()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def lookup_library(lookup_proc: LibraryProcess) -> LibraryService:
    return LibraryService(lookup_proc.url)


@pytest.fixture(scope="module")
def client(
    lookup_library: LibraryService, files_dir: Path, isolated_redis_url: str
) -> Iterator[TestClient]:
    with api_client(
        library_url=lookup_library.url, files_dir=files_dir, redis_url=isolated_redis_url
    ) as api:
        yield api


def _ingested(client: TestClient, lib: LibraryService, key: str, user: uuid.UUID, pdf: Path) -> str:
    with pdf.open("rb") as fh:
        resp = client.post(
            "/v1/library/documents",
            headers=bearer(key),
            files={"file": (pdf.name, fh, "application/pdf")},
        )
    assert resp.status_code == 202, resp.text
    doc_id = str(resp.json()["id"])
    with httpx.Client(timeout=30) as raw:
        doc = wait_terminal(raw, lib, lib.headers(user), doc_id, timeout=READY_WITHIN_S)
    assert doc["status"] == "ready", doc
    return doc_id


def _get(client: TestClient, key: str, doc_id: str) -> dict[str, Any]:
    resp = client.get(f"/v1/library/documents/{doc_id}", headers=bearer(key))
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def _pdf(tmp_path: Path, *, title: str, doi: str | None) -> Path:
    name = f"{uuid.uuid4().hex[:8]}.pdf"
    return paper_pdf(tmp_path / name, title=title, doi=doi, references=[])


class TestLookupFills:
    def test_a_doi_fills_authors_venue_and_year_from_openalex(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory)
        pdf = _pdf(tmp_path, title="A draft of the CiteSee paper", doi=CITESEE_DOI)
        doc = _get(client, user.key, _ingested(client, lookup_library, user.key, user.id, pdf))
        assert doc["authors"] == CITESEE_AUTHORS
        assert doc["venue"] == CHI_2023 and doc["year"] == 2023
        assert doc["title"].startswith("CiteSee: Augmenting Citations")
        source = doc["metadata_source"]
        assert {source[f] for f in ("authors", "venue", "year", "title", "doi")} == {"openalex"}
        assert doc["retracted"] is False
        listed = client.get("/v1/library/documents", headers=bearer(user.key)).json()["items"]
        assert listed[0]["authors"] == CITESEE_AUTHORS and listed[0]["retracted"] is False

    def test_crossref_answers_where_openalex_has_nothing(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        recorded: RecordedMetadata,
        tmp_path: Path,
    ) -> None:
        """OpenAlex answers 404 for this DOI (recorded: it has no such work); Crossref has it."""
        user = make_user(session_factory)
        asked = dict(recorded.hits)
        pdf = _pdf(
            tmp_path, title=f"Notes on a registry {uuid.uuid4().hex[:6]}", doi=SURGISPHERE_DOI
        )
        doc = _get(client, user.key, _ingested(client, lookup_library, user.key, user.id, pdf))
        assert doc["authors"] == ["Mandeep R Mehra", "Sapan S Desai", "Frank Ruschitzka",
                                  "Amit N Patel"]  # fmt: skip
        assert doc["year"] == 2020 and doc["venue"] == "The Lancet"
        assert {doc["metadata_source"][f] for f in ("authors", "year", "venue")} == {"crossref"}
        assert recorded.hits["openalex"] > asked.get("openalex", 0)  # asked first
        assert recorded.hits["crossref"] > asked.get("crossref", 0)

    def test_a_title_matches_only_exactly(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
    ) -> None:
        """The recorded search returns S2ORC for both titles; only the equal one takes it."""
        user = make_user(session_factory)
        exact = _pdf(tmp_path, title=S2ORC_TITLE, doi=None)
        near = _pdf(tmp_path, title=S2ORC_TITLE + " Revisited", doi=None)
        found = _get(client, user.key, _ingested(client, lookup_library, user.key, user.id, exact))
        assert found["doi"] == S2ORC_DOI and found["metadata_source"]["doi"] == "openalex"
        assert found["authors"][0] == "Kyle Lo" and found["year"] == 2020
        other = make_user(session_factory)  # not marked a duplicate of the first
        missed = _get(
            client, other.key, _ingested(client, lookup_library, other.key, other.id, near)
        )
        assert missed["doi"] is None and missed["authors"] == []
        assert "openalex" not in missed["metadata_source"].values()


class TestManualKept:
    def test_a_manual_correction_outlives_a_reingest_with_lookup(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        isolated_redis_url: str,
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory)
        pdf = _pdf(tmp_path, title="CiteSee, as first drafted", doi=CITESEE_DOI)
        doc_id = _ingested(client, lookup_library, user.key, user.id, pdf)
        fix = {"authors": ["J. C. Chang", "A. X. Zhang"], "venue": "CHI '23"}
        resp = client.patch(f"/v1/library/documents/{doc_id}", headers=bearer(user.key), json=fix)
        assert resp.status_code == 200, resp.text
        with session_factory() as db, db.begin():
            db.execute(
                update(Document)
                .where(Document.id == uuid.UUID(doc_id))
                .values(status="queued", year=None, lease_owner=None, lease_until=None)
            )
        settings = get_settings().model_copy(update={"redis_url": isolated_redis_url})
        build_celery(settings).send_task(
            LIBRARY_INGEST_TASK, args=[doc_id], queue=LIBRARY_QUEUE, ignore_result=True
        )
        with httpx.Client(timeout=30) as raw:
            again = wait_terminal(
                raw, lookup_library, lookup_library.headers(user.id), doc_id, READY_WITHIN_S
            )
        assert again["status"] == "ready" and again["attempts"] == 2
        doc = _get(client, user.key, doc_id)
        assert doc["authors"] == fix["authors"] and doc["venue"] == "CHI '23"
        assert doc["metadata_source"]["authors"] == "manual"
        assert doc["year"] == 2023 and doc["metadata_source"]["year"] == "openalex"


class TestRetracted:
    @pytest.mark.parametrize(
        ("doi", "source"),
        [(WAKEFIELD_DOI, "openalex"), (SURGISPHERE_DOI, "crossref")],
        ids=["openalex", "crossref"],
    )
    def test_a_retracted_paper_is_flagged_in_the_documents_json(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
        doi: str,
        source: str,
    ) -> None:
        user = make_user(session_factory)
        pdf = _pdf(tmp_path, title="A study of a vaccine and a bowel", doi=doi)
        doc_id = _ingested(client, lookup_library, user.key, user.id, pdf)
        doc = _get(client, user.key, doc_id)
        assert doc["retracted"] is True and doc["metadata_source"]["authors"] == source
        assert doc["title"].startswith("RETRACTED")
        listed = client.get("/v1/library/documents", headers=bearer(user.key)).json()["items"]
        assert [d["retracted"] for d in listed if d["id"] == doc_id] == [True]
        with httpx.Client(timeout=30) as raw:
            own = raw.get(
                f"{lookup_library.url}/documents/{doc_id}", headers=lookup_library.headers(user.id)
            ).json()
        assert own["retracted"] is True


class TestLookupFailures:
    @pytest.mark.parametrize(
        ("doi", "logged"),
        [
            ("10.5555/lookup.500", "OpenAlex: the server answered 500"),
            ("10.5555/lookup.garbage", "OpenAlex answered something that is not JSON"),
            ("10.5555/lookup.stall", "OpenAlex: no answer within 1.5 s"),
        ],
        ids=["status_500", "not_json", "stall"],
    )
    def test_a_failed_lookup_leaves_the_document_ready_with_what_it_has(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        lookup_proc: LibraryProcess,
        session_factory: sessionmaker[Session],
        tmp_path: Path,
        doi: str,
        logged: str,
    ) -> None:
        user = make_user(session_factory)
        title = f"Failing lookups considered {uuid.uuid4().hex[:6]}"
        doc_id = _ingested(
            client, lookup_library, user.key, user.id, _pdf(tmp_path, title=title, doi=doi)
        )
        doc = _get(client, user.key, doc_id)
        assert doc["title"] == title and doc["doi"] == doi and doc["retracted"] is False
        assert doc["metadata_source"]["doi"] == "text"
        assert not {"openalex", "crossref"} & set(doc["metadata_source"].values())
        assert doc["chunks"] and doc["chunks"] > 0
        assert f"library.lookup: document {doc_id}: {logged}" in lookup_proc.log()

    def test_the_lookup_server_down_leaves_the_document_ready(
        self,
        client: TestClient,
        lookup_library: LibraryService,
        session_factory: sessionmaker[Session],
        recorded: RecordedMetadata,
        tmp_path: Path,
    ) -> None:
        user = make_user(session_factory)
        recorded.down = True
        try:
            pdf = _pdf(tmp_path, title="CiteSee while OpenAlex is away", doi=CITESEE_DOI)
            doc = _get(client, user.key, _ingested(client, lookup_library, user.key, user.id, pdf))
        finally:
            recorded.down = False
        assert doc["title"] == "CiteSee while OpenAlex is away" and doc["authors"] == []
        assert doc["doi"] == CITESEE_DOI and doc["metadata_source"]["doi"] == "text"


class TestLookupSwitch:
    """Which processes look documents up at all (decided once, at start)."""

    def _lookup(self, recorded: RecordedMetadata, **overrides: Any) -> MetadataLookup | None:
        env = recorded.env()
        fields: dict[str, Any] = {
            "openalex_base_url": env["LEAFLAB_OPENALEX_BASE_URL"],
            "crossref_base_url": env["LEAFLAB_CROSSREF_BASE_URL"],
            "web_allow": recorded.allow_entry,
            "metadata_lookup": True,
            **overrides,
        }
        settings = LibrarySettings(**fields)
        return build_lookup(settings, NetGuard(parse_allow_list(settings.web_allow)))

    def test_on_only_when_the_guard_lets_the_openalex_url_through(
        self, recorded: RecordedMetadata
    ) -> None:
        assert self._lookup(recorded) is not None
        # A loopback URL nobody listed: the guard refuses it, so nothing is ever asked.
        assert self._lookup(recorded, web_allow="") is None
        assert self._lookup(recorded, metadata_lookup=False) is None
        asked = sum(recorded.hits.values())
        lookup = self._lookup(recorded)
        assert lookup is not None
        found = lookup.find(doi=CITESEE_DOI, arxiv_id=None, title=None, document="switch")
        assert found is not None and found.authors == CITESEE_AUTHORS
        assert sum(recorded.hits.values()) == asked + 1

    def test_the_test_processes_run_with_lookups_off(self, stack: object) -> None:
        assert LibrarySettings().metadata_lookup is False  # tests/conftest.py's stack env
