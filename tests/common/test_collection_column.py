"""The ``collection`` columns (documents, document_references, library_imports) over
the real Postgres: a malformed collection is refused before any SQL is sent, with
an error naming the column, and no row appears; every value read back is a
``Collection`` equal to the one written; filters over lists of them still match."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import event, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.models import Document, DocumentReference, LibraryImport, User

BAD = ["eval:scratch", "project:../x", "user:not-a-uuid", "LAB", "", "x" * 200]


@pytest.fixture
def owner(session_factory: sessionmaker[Session]) -> uuid.UUID:
    with session_factory() as db, db.begin():
        user = User(email=f"col-{uuid.uuid4().hex[:10]}@lab.test")
        db.add(user)
        db.flush()
        return user.id


@pytest.fixture
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every statement this engine sends to Postgres while the test runs."""
    sent: list[str] = []

    def record(*args: Any) -> None:
        sent.append(args[2])

    event.listen(engine, "before_cursor_execute", record)
    yield sent
    event.remove(engine, "before_cursor_execute", record)


def _document(owner: uuid.UUID, collection: Any, content_hash: str) -> Document:
    return Document(
        collection=collection,
        owner_id=owner,
        content_hash=content_hash,
        filename="paper.pdf",
        status=DocumentStatus.QUEUED,
    )


def _orm_add(db: Session, owner: uuid.UUID, bad: str, key: str) -> None:
    db.add(_document(owner, bad, key))
    db.flush()


def _core_insert(db: Session, owner: uuid.UUID, bad: str, key: str) -> None:
    db.execute(
        insert(Document).values(
            id=uuid.uuid4(), collection=bad, owner_id=owner, content_hash=key, status="queued"
        )
    )


def _orm_update(db: Session, owner: uuid.UUID, bad: str, key: str) -> None:
    doc = _document(owner, Collection.personal(owner), key)
    db.add(doc)
    db.flush()
    doc.collection = bad  # type: ignore[assignment]
    db.flush()


def _core_update(db: Session, owner: uuid.UUID, bad: str, key: str) -> None:
    db.add(_document(owner, Collection.personal(owner), key))
    db.flush()
    db.execute(update(Document).where(Document.content_hash == key).values(collection=bad))


WRITES: dict[str, Callable[[Session, uuid.UUID, str, str], None]] = {
    "orm-add": _orm_add,
    "core-insert": _core_insert,
    "orm-update": _orm_update,
    "core-update": _core_update,
}


@pytest.mark.parametrize("how", list(WRITES))
@pytest.mark.parametrize("bad", BAD)
def test_a_malformed_collection_is_refused_before_sql_naming_the_column(
    session_factory: sessionmaker[Session],
    owner: uuid.UUID,
    statements: list[str],
    how: str,
    bad: str,
) -> None:
    key = uuid.uuid4().hex
    with session_factory() as db:
        with pytest.raises(StatementError) as err:
            WRITES[how](db, owner, bad, key)
        db.rollback()
    assert isinstance(err.value.orig, ValueError)
    assert "documents.collection:" in str(err.value.orig)
    assert "collection" in str(err.value.orig).split(":", 1)[1]  # the contract's reason
    # The refused statement never reached Postgres (for an update, the row's own
    # valid INSERT did), and nothing was stored.
    refused = "UPDATE" if how.endswith("update") else "INSERT"
    assert not [s for s in statements if s.lstrip().upper().startswith(refused)]
    with session_factory() as db:
        assert db.scalar(select(func.count()).where(Document.content_hash == key)) == 0


def test_the_other_collection_columns_refuse_too_naming_theirs(
    session_factory: sessionmaker[Session], owner: uuid.UUID
) -> None:
    with session_factory() as db, db.begin():
        doc = _document(owner, Collection.personal(owner), uuid.uuid4().hex)
        db.add(doc)
        db.flush()
        doc_id = doc.id
    with session_factory() as db:
        db.add(
            DocumentReference(
                document_id=doc_id, collection="eval:scratch", ordinal=0, text="x", norm_text="x"
            )
        )
        with pytest.raises(StatementError, match="document_references.collection"):
            db.flush()
        db.rollback()
    with session_factory() as db:
        db.add(LibraryImport(owner_id=owner, collection="user:x", format="bibtex", total=0))
        with pytest.raises(StatementError, match="library_imports.collection"):
            db.flush()
        db.rollback()
    with session_factory() as db:
        assert db.scalar(select(func.count()).where(DocumentReference.document_id == doc_id)) == 0
        assert db.scalar(select(func.count()).where(LibraryImport.owner_id == owner)) == 0


def test_every_read_is_a_collection_equal_to_what_was_written(
    session_factory: sessionmaker[Session], owner: uuid.UUID
) -> None:
    # Not the lab's collection: every member reads it, and a row left there would
    # show up in other tests' listings. A project with no row of its own is enough.
    written = [Collection.personal(owner), Collection.project(uuid.uuid4())]
    with session_factory() as db, db.begin():
        docs = [_document(owner, c, uuid.uuid4().hex) for c in written]
        db.add_all(docs)
        db.flush()
        db.add(
            DocumentReference(
                document_id=docs[0].id, collection=written[0], ordinal=0, text="x", norm_text="x"
            )
        )
        # Plain text of a valid spelling is accepted and read back typed.
        db.add(LibraryImport(owner_id=owner, collection=written[0].key, format="bibtex", total=0))
        ids = [d.id for d in docs]
    with session_factory() as db:
        read = [db.get(Document, i) for i in ids]
        got = [d.collection for d in read if d is not None]
        ref = db.scalar(
            select(DocumentReference.collection).where(DocumentReference.document_id == ids[0])
        )
        job = db.scalar(select(LibraryImport.collection).where(LibraryImport.owner_id == owner))
    assert got == written
    assert all(type(c) is Collection for c in [*got, ref, job])
    assert (ref, job) == (written[0], written[0])


def test_filters_over_collections_bind_and_match(
    session_factory: sessionmaker[Session], owner: uuid.UUID
) -> None:
    mine, lab = Collection.personal(owner), Collection.LAB
    key = uuid.uuid4().hex
    with session_factory() as db, db.begin():
        db.add(_document(owner, mine, key))
    with session_factory() as db:
        found = db.scalars(
            select(Document.content_hash).where(
                Document.collection.in_([mine, lab]), Document.owner_id == owner
            )
        ).all()
        assert found == [key]
        assert db.scalar(select(Document.collection).where(Document.collection == mine.key)) == mine
        with pytest.raises(StatementError, match="documents.collection"):
            db.scalars(select(Document).where(Document.collection.in_([mine, "eval:scratch"])))
