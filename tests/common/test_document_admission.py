"""``admit_document``: the one way a stored file becomes a queued library document."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.documents.admission import AdmissionFailed, Admitted, admit_document
from services.common.models import Document
from tests.fixtures.builders import make_project, make_user


def _hash() -> str:
    return uuid.uuid4().hex * 2  # a sha256-sized key no other test uses


def test_the_row_is_committed_before_its_ingest_is_sent_and_a_second_admission_is_a_duplicate(
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    collection, key = Collection.personal(user.id), _hash()
    seen: list[tuple[str, DocumentStatus | None]] = []

    def queue(document_id: str) -> None:
        # As the ingest task would: a new session, so only a committed row is found.
        with session_factory() as db:
            status = db.scalar(select(Document.status).where(Document.id == uuid.UUID(document_id)))
        seen.append((document_id, status))

    first = admit_document(
        session_factory,
        queue,
        content_hash=key,
        filename="a.pdf",
        collection=collection,
        owner_id=user.id,
    )
    again = admit_document(
        session_factory,
        queue,
        content_hash=key,
        filename="b.pdf",
        collection=collection,
        owner_id=user.id,
    )

    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.id == first.id and first.status == DocumentStatus.QUEUED
    assert seen == [(first.id, DocumentStatus.QUEUED)]  # sent once, after its commit


def test_a_failed_document_admitted_again_is_queued_again_from_zero_attempts(
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    collection, key = Collection.personal(user.id), _hash()
    sent: list[str] = []
    first = admit_document(
        session_factory,
        sent.append,
        content_hash=key,
        filename="a.pdf",
        collection=collection,
        owner_id=user.id,
    )
    with session_factory() as db, db.begin():
        db.execute(
            update(Document)
            .where(Document.id == uuid.UUID(first.id))
            .values(status=DocumentStatus.FAILED, error="parse failed", attempts=3)
        )

    again = admit_document(
        session_factory,
        sent.append,
        content_hash=key,
        filename="a.pdf",
        collection=collection,
        owner_id=user.id,
    )

    assert again.id == first.id and not again.duplicate
    assert sent == [first.id, first.id]
    with session_factory() as db:
        doc = db.get(Document, uuid.UUID(first.id))
        assert doc is not None
        assert (doc.status, doc.error, doc.attempts) == (DocumentStatus.QUEUED, None, 0)


def test_a_collection_whose_project_is_gone_is_refused_and_nothing_is_sent(
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    make_project(session_factory, user)  # a real project exists; this one does not
    sent: list[str] = []

    with pytest.raises(AdmissionFailed) as refused:
        admit_document(
            session_factory,
            sent.append,
            content_hash=_hash(),
            filename="a.pdf",
            collection=Collection.project(uuid.uuid4()),
            owner_id=user.id,
        )

    assert refused.value.code == "gone"
    assert sent == []


def test_the_same_file_added_at_the_same_moment_is_a_conflict_then_the_same_document(
    session_factory: sessionmaker[Session],
) -> None:
    """Two requests register one file at once: the loser's insert meets the winner's
    unique index entry. It gets ``conflict`` (a 409 the caller may retry), nothing is
    sent for it, and its retry finds the winner's document."""
    user = make_user(session_factory)
    collection, key = Collection.personal(user.id), _hash()
    sent: list[str] = []
    outcome: list[Admitted | AdmissionFailed] = []

    def admit() -> None:
        try:
            outcome.append(
                admit_document(
                    session_factory,
                    sent.append,
                    content_hash=key,
                    filename="late.pdf",
                    collection=collection,
                    owner_id=user.id,
                )
            )
        except AdmissionFailed as exc:
            outcome.append(exc)

    winner = session_factory()
    try:
        # The winner's row is flushed, not committed: the loser's SELECT does not see
        # it, and its INSERT waits on the unique index until the winner commits.
        row = Document(
            collection=collection,
            owner_id=user.id,
            content_hash=key,
            filename="first.pdf",
            status=DocumentStatus.QUEUED,
            attempts=0,
        )
        winner.add(row)
        winner.flush()
        loser = threading.Thread(target=admit)
        loser.start()
        _wait_until_blocked_on_a_lock(session_factory)
        winner.commit()
        loser.join(timeout=30)
        assert not loser.is_alive()
    finally:
        winner.close()

    assert len(outcome) == 1 and isinstance(outcome[0], AdmissionFailed), outcome
    assert outcome[0].code == "conflict"
    assert sent == []
    retry = admit_document(
        session_factory,
        sent.append,
        content_hash=key,
        filename="late.pdf",
        collection=collection,
        owner_id=user.id,
    )
    assert (retry.id, retry.duplicate) == (str(row.id), True)
    assert sent == []


def _wait_until_blocked_on_a_lock(factory: sessionmaker[Session]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with factory() as db:
            waiting = db.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
        if waiting:
            return
        time.sleep(0.05)
    raise AssertionError("the second admission never waited on the first one's row")
