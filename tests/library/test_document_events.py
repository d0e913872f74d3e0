"""GET /v1/library/documents/{id}/events: a document's ingestion progress as
Server-Sent Events, through the real API app, Postgres and Redis — replayed,
resumed with Last-Event-ID, followed live to the end, made from the row when
the stream is gone, and hidden (404) from whoever may not read the document."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.keys import document_stream
from services.common.models import Document, Project, ProjectMember
from services.library.progress import DocumentProgress
from tests.library import hostile_pdfs
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import LibraryService


def frames(text: str) -> list[dict[str, Any]]:
    """SSE frames as {id, event, data}; comments (pings) left out."""
    out = []
    for block in text.split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.splitlines():
            if line.startswith(":") or ": " not in line:
                continue
            name, _, value = line.partition(": ")
            fields[name] = json.loads(value) if name == "data" else value
        if "event" in fields:
            out.append(fields)
    return out


@pytest.fixture(scope="module")
def people(session_factory: sessionmaker[Session]) -> dict[str, Any]:
    """An owner with a personal and a project document, a fellow member, an outsider."""
    with session_factory() as db, db.begin():
        owner, owner_key = user_with_key(db, new_email("ev-owner"))
        member, member_key = user_with_key(db, new_email("ev-member"))
        _, outsider_key = user_with_key(db, new_email("ev-out"))
        project = Project(name=f"ev-{uuid.uuid4().hex[:8]}")
        other = Project(name=f"ev-other-{uuid.uuid4().hex[:8]}")
        db.add_all([project, other])
        db.flush()
        db.add(ProjectMember(project_id=project.id, user_id=owner.id))
        db.add(ProjectMember(project_id=project.id, user_id=member.id))
        db.add(ProjectMember(project_id=other.id, user_id=owner.id))
        return {
            "owner": owner.id,
            "project": project.id,
            "keys": {"owner": owner_key, "member": member_key, "outsider": outsider_key},
        }


def _document(
    factory: sessionmaker[Session], owner: uuid.UUID, collection: Collection, status: str, **kw: Any
) -> str:
    with factory() as db, db.begin():
        doc = Document(
            collection=collection,
            owner_id=owner,
            content_hash=uuid.uuid4().hex,
            filename="paper.pdf",
            status=status,
            **kw,
        )
        db.add(doc)
        db.flush()
        return str(doc.id)


@pytest.fixture(scope="module")
def client(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    files = tmp_path_factory.mktemp("events_files")
    # No library service is needed: the route reads the row and the stream itself.
    with api_client(library_url="http://127.0.0.1:9", files_dir=files) as c:
        yield c


@pytest.fixture(scope="module")
def rds(stack: Any) -> redis.Redis:
    return redis.Redis.from_url(stack.redis_url)  # type: ignore[attr-defined]


def _publish_all(rds: redis.Redis, doc_id: str) -> list[str]:
    progress = DocumentProgress(rds, doc_id)  # the library's own publisher
    progress.publish("document.parsed", {"pages": 3, "chunks": 4})
    progress.publish("document.batch", {"done": 2, "total": 4, "embedded": 2, "reused": 0})
    progress.publish("document.batch", {"done": 4, "total": 4, "embedded": 3, "reused": 1})
    progress.publish("document.ready", {"chunks": 4, "pages": 3, "embedded": 3, "reused": 1})
    return [e[0].decode() for e in rds.xrange(document_stream(doc_id))]


def test_replays_resumes_and_ends_with_the_document(
    client: TestClient,
    people: dict[str, Any],
    session_factory: sessionmaker[Session],
    rds: redis.Redis,
) -> None:
    owner = bearer(people["keys"]["owner"])
    doc_id = _document(
        session_factory, people["owner"], Collection.personal(people["owner"]), "ready"
    )
    ids = _publish_all(rds, doc_id)
    resp = client.get(f"/v1/library/documents/{doc_id}/events", headers=owner)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    got = frames(resp.text)
    assert [f["event"] for f in got] == [
        "document.parsed",
        "document.batch",
        "document.batch",
        "document.ready",
    ]
    assert [f["id"] for f in got] == ids
    assert got[2]["data"]["done"] == 4 and got[-1]["data"]["document_id"] == doc_id

    # Resumed after the first batch: only what came after, by header or by query.
    resumed = client.get(
        f"/v1/library/documents/{doc_id}/events", headers={**owner, "Last-Event-ID": ids[1]}
    )
    assert [f["id"] for f in frames(resumed.text)] == ids[2:]
    by_query = client.get(
        f"/v1/library/documents/{doc_id}/events", headers=owner, params={"last_event_id": ids[2]}
    )
    assert [f["id"] for f in frames(by_query.text)] == ids[3:]

    # Resumed from an id the stream no longer holds: told so, then the rest.
    lost = frames(
        client.get(
            f"/v1/library/documents/{doc_id}/events",
            headers={**owner, "Last-Event-ID": "1-0"},
        ).text
    )
    assert lost[0]["event"] == "events_lost" and "id" not in lost[0]
    assert [f["id"] for f in lost[1:]] == ids


def test_follows_a_running_ingestion_live(
    client: TestClient,
    people: dict[str, Any],
    session_factory: sessionmaker[Session],
    rds: redis.Redis,
) -> None:
    doc_id = _document(
        session_factory, people["owner"], Collection.project(people["project"]), "embedding"
    )
    progress = DocumentProgress(rds, doc_id)
    progress.publish("document.parsed", {"pages": 10, "chunks": 40})

    def ingest() -> None:
        time.sleep(0.5)
        progress.publish("document.batch", {"done": 32, "total": 40, "embedded": 32, "reused": 0})
        time.sleep(0.3)
        progress.publish("document.failed", {"reason": "the parser ran out of memory"})

    worker = threading.Thread(target=ingest)
    worker.start()
    # A fellow project member may follow it.
    member = bearer(people["keys"]["member"])
    with client.stream("GET", f"/v1/library/documents/{doc_id}/events", headers=member) as resp:
        assert resp.status_code == 200
        text = "".join(resp.iter_text())
    worker.join()
    assert [f["event"] for f in frames(text)] == [
        "document.parsed",
        "document.batch",
        "document.failed",
    ]
    assert frames(text)[-1]["data"]["reason"] == "the parser ran out of memory"


def test_a_finished_document_without_a_stream_ends_from_its_row(
    client: TestClient, people: dict[str, Any], session_factory: sessionmaker[Session]
) -> None:
    owner = bearer(people["keys"]["owner"])
    collection = Collection.personal(people["owner"])
    failed = _document(session_factory, people["owner"], collection, "failed", error="no text")
    got = frames(client.get(f"/v1/library/documents/{failed}/events", headers=owner).text)
    assert got == [
        {"event": "document.failed", "data": {"document_id": failed, "reason": "no text"}}
    ]
    ready = _document(session_factory, people["owner"], collection, "ready", chunks=7, pages=2)
    got = frames(client.get(f"/v1/library/documents/{ready}/events", headers=owner).text)
    assert [(f["event"], f["data"]["chunks"]) for f in got] == [("document.ready", 7)]


def test_who_may_not_read_it_gets_404_and_hostile_input_4xx(
    client: TestClient,
    people: dict[str, Any],
    session_factory: sessionmaker[Session],
    rds: redis.Redis,
) -> None:
    keys = people["keys"]
    personal = _document(
        session_factory, people["owner"], Collection.personal(people["owner"]), "ready"
    )
    in_project = _document(
        session_factory, people["owner"], Collection.project(people["project"]), "ready"
    )
    _publish_all(rds, personal)
    _publish_all(rds, in_project)
    cases = [
        (keys["member"], personal),  # another member's personal library
        (keys["outsider"], personal),
        (keys["outsider"], in_project),  # a member of other projects only
        (keys["owner"], str(uuid.uuid4())),  # no such document
        (keys["owner"], "not-a-uuid"),
        (keys["owner"], "..%2F..%2Fhealthz"),
        (keys["owner"], "%00"),
    ]
    for key, doc in cases:
        resp = client.get(f"/v1/library/documents/{doc}/events", headers=bearer(key))
        assert resp.status_code == 404, (doc, resp.text)
        assert resp.json()["error"]["code"] == "not_found"
        assert "document." not in resp.text
    assert client.get(f"/v1/library/documents/{personal}/events").status_code == 401

    owner = bearer(keys["owner"])
    for bad in ("abc", "1-2-3", "-1-0", "99999999999999999999-0", "1-0\x7f", "1" * 200 + "-0"):
        resp = client.get(
            f"/v1/library/documents/{personal}/events", headers=owner, params={"last_event_id": bad}
        )
        assert resp.status_code == 422, (bad, resp.text)
        assert resp.json()["error"]["code"] == "invalid_request"
    for bad in ("abc", "0-0 OR 1", "18446744073709551616-0"):
        resp = client.get(
            f"/v1/library/documents/{personal}/events", headers={**owner, "Last-Event-ID": bad}
        )
        assert resp.status_code == 422, (bad, resp.text)


def test_follows_a_real_upload_to_ready(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """The library service's own events for an uploaded PDF, end to end."""
    with session_factory() as db, db.begin():
        _, key = user_with_key(db, new_email("ev-real"))
    pdf = hostile_pdfs.theorem_pdf(tmp_path / "flows.pdf")
    with api_client(library_url=library.url, files_dir=files_dir) as api:
        with pdf.open("rb") as fh:
            resp = api.post(
                "/v1/library/documents",
                headers=bearer(key),
                files={"file": ("flows.pdf", fh, "application/pdf")},
            )
        assert resp.status_code == 202, resp.text
        doc_id = resp.json()["id"]
        with api.stream("GET", f"/v1/library/documents/{doc_id}/events", headers=bearer(key)) as s:
            got = frames("".join(s.iter_text()))
        detail = api.get(f"/v1/library/documents/{doc_id}", headers=bearer(key)).json()
    kinds = [f["event"] for f in got]
    assert kinds[0] == "document.parsed" and kinds[-1] == "document.ready", kinds
    assert "document.batch" in kinds and all("id" in f for f in got)
    assert got[-1]["data"]["chunks"] == detail["chunks"] and detail["status"] == "ready"


def test_an_entry_the_contract_refuses_is_skipped_and_the_stream_still_ends(
    client: TestClient,
    people: dict[str, Any],
    session_factory: sessionmaker[Session],
    rds: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner = bearer(people["keys"]["owner"])
    collection = Collection.personal(people["owner"])
    doc_id = _document(session_factory, people["owner"], collection, "ready", chunks=4, pages=3)
    progress = DocumentProgress(rds, doc_id)
    progress.publish("document.parsed", {"pages": 3, "chunks": 4})
    # Written by hand, as a broken or older emitter would: never relayed.
    refused = [
        ("document.parse", {"document_id": doc_id, "pages": 3}),  # unknown type
        ("document.batch", {"document_id": doc_id, "done": "2", "total": 4, "embedded": 2}),
        ("document.ready", {"document_id": doc_id, "chunks": "four", "pages": 3}),
    ]
    for kind, data in refused:
        rds.xadd(document_stream(doc_id), {"type": kind, "data": json.dumps(data)})
    rds.xadd(document_stream(doc_id), {"type": "document.batch", "data": "{not json"})
    progress.publish("document.batch", {"done": 4, "total": 4, "embedded": 4, "reused": 0})
    progress.publish("document.ready", {"chunks": 4, "pages": 3, "embedded": 4, "reused": 0})
    with caplog.at_level("WARNING", logger="services.api.events.stream_follow"):
        got = frames(client.get(f"/v1/library/documents/{doc_id}/events", headers=owner).text)
    assert [f["event"] for f in got] == ["document.parsed", "document.batch", "document.ready"]
    assert got[1]["data"]["done"] == 4 and got[2]["data"]["embedded"] == 4
    assert caplog.text.count("not relaying entry") == 4

    # A refused terminal event does not end the stream: the row's ends it.
    other = _document(session_factory, people["owner"], collection, "ready", chunks=9, pages=2)
    DocumentProgress(rds, other).publish("document.parsed", {"pages": 2, "chunks": 9})
    bad_ready = {"document_id": other, "chunks": "nine", "pages": 2}
    rds.xadd(document_stream(other), {"type": "document.ready", "data": json.dumps(bad_ready)})
    got = frames(client.get(f"/v1/library/documents/{other}/events", headers=owner).text)
    assert [(f["event"], "id" in f) for f in got] == [
        ("document.parsed", True),
        ("document.ready", False),  # made from the row
    ]
    assert got[-1]["data"] == {"document_id": other, "chunks": 9, "pages": 2}
