"""The library's one row lease (``row_lease.RowLease``) on documents and imports: one
holder at a time, a lost holder fenced out of every write, the sweeper's ``stale``."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.db import transaction
from services.common.documents.admission import admit_document
from services.common.models import Document, LibraryImport
from services.common.models.library_imports import IMPORT_QUEUED, IMPORT_RUNNING
from services.library.imports.lease import IMPORTS, claim_import, renew
from services.library.lease import DOCUMENTS, LeaseLost, claim, fenced_set
from tests.fixtures.builders import make_user


def _document(factory: sessionmaker[Session]) -> uuid.UUID:
    user = make_user(factory)
    admitted = admit_document(
        factory,
        None,
        content_hash=uuid.uuid4().hex * 2,
        filename="a.pdf",
        collection=Collection.personal(user.id),
        owner_id=user.id,
    )
    return uuid.UUID(admitted.id)


def _expire(
    factory: sessionmaker[Session], model: type[Document | LibraryImport], row_id: uuid.UUID
) -> None:
    """As if the holder stopped renewing a minute ago (a frozen or dead worker)."""
    with transaction(factory) as db:
        db.execute(
            update(model)
            .where(model.id == row_id)
            .values(lease_until=func.now() - timedelta(minutes=1))
        )


def test_a_held_document_is_not_claimed_twice_and_a_lost_holder_writes_nothing(
    session_factory: sessionmaker[Session],
) -> None:
    doc_id = _document(session_factory)
    first = claim(session_factory, doc_id, ttl_s=60, max_attempts=5)
    assert first is not None and first.attempt == 1
    assert claim(session_factory, doc_id, ttl_s=60, max_attempts=5) is None  # held

    _expire(session_factory, Document, doc_id)
    second = claim(session_factory, doc_id, ttl_s=60, max_attempts=5)
    assert second is not None and second.owner != first.owner and second.attempt == 2

    with pytest.raises(LeaseLost):
        fenced_set(session_factory, first, status=DocumentStatus.READY, chunks=99)
    fenced_set(session_factory, second, status=DocumentStatus.EMBEDDING)
    with session_factory() as db:
        row = db.get(Document, doc_id)
        assert row is not None
        assert (row.status, row.chunks, row.lease_owner) == (
            DocumentStatus.EMBEDDING,
            None,
            second.owner,
        )


def test_a_document_out_of_tries_is_not_claimed(session_factory: sessionmaker[Session]) -> None:
    doc_id = _document(session_factory)
    assert claim(session_factory, doc_id, ttl_s=60, max_attempts=1) is not None
    _expire(session_factory, Document, doc_id)
    assert claim(session_factory, doc_id, ttl_s=60, max_attempts=1) is None


def test_an_import_renewed_by_a_lost_holder_rolls_its_transaction_back(
    session_factory: sessionmaker[Session],
) -> None:
    user = make_user(session_factory)
    with transaction(session_factory) as db:
        row = LibraryImport(
            owner_id=user.id,
            collection=Collection.personal(user.id),
            format="bibtex",
            status=IMPORT_QUEUED,
            total=1,
        )
        db.add(row)
        db.flush()
        import_id = row.id
    first = claim_import(session_factory, import_id, ttl_s=60)
    assert first is not None and claim_import(session_factory, import_id, ttl_s=60) is None
    _expire(session_factory, LibraryImport, import_id)
    second = claim_import(session_factory, import_id, ttl_s=60)
    assert second is not None and second.attempt == 2

    with pytest.raises(LeaseLost), transaction(session_factory) as db:
        db.execute(
            update(LibraryImport).where(LibraryImport.id == import_id).values(error="stale write")
        )
        renew(db, first, ttl_s=60)
    with session_factory() as db:
        kept = db.get(LibraryImport, import_id)
        assert kept is not None
        assert (kept.error, kept.status, kept.lease_owner) == (None, IMPORT_RUNNING, second.owner)


def test_stale_is_an_expired_claim_or_a_long_unclaimed_row_never_a_live_claim(
    session_factory: sessionmaker[Session],
) -> None:
    live, expired, unclaimed, fresh = (_document(session_factory) for _ in range(4))
    for doc_id in (live, expired):
        assert claim(session_factory, doc_id, ttl_s=60, max_attempts=5) is not None
    _expire(session_factory, Document, expired)
    _expire(session_factory, Document, unclaimed)  # queued, unclaimed since a minute ago
    ids = (live, expired, unclaimed, fresh)
    with session_factory() as db:
        stale = set(
            db.scalars(
                select(Document.id).where(Document.id.in_(ids), DOCUMENTS.stale(requeue_after_s=30))
            )
        )
        imports_stale = db.scalars(
            select(LibraryImport.id).where(IMPORTS.stale(requeue_after_s=30)).limit(0)
        ).all()
    assert stale == {expired, unclaimed}
    assert imports_stale == []  # the same predicate builds for the other table
