"""Which citation keys resolve, against the real database: a paper gathered from
the library resolves only while its document exists; a fabricated key, or one
with neither a document nor an OpenAlex record, never does. And a key that
slipped through unresolved gives the verifier no source, never a crash."""

from __future__ import annotations

import uuid

from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.db import transaction
from services.common.models import Document, User
from services.worker.survey.citations import resolving
from services.worker.survey.verify import _claims_prompt, source_passages


def _document(db: Session, owner: uuid.UUID) -> uuid.UUID:
    doc = Document(
        collection=Collection.personal(owner),
        owner_id=owner,
        content_hash=uuid.uuid4().hex * 2,
        filename="paper.pdf",
        status="ready",
    )
    db.add(doc)
    db.flush()
    return doc.id


def test_a_deleted_document_and_a_fabricated_key_do_not_resolve(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as db:
        user = User(email=f"survey-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        kept, deleted = _document(db, user.id), _document(db, user.id)
    papers = {
        "kept2020": {"document_id": str(kept), "chunks": []},
        "deleted2021": {"document_id": str(deleted), "chunks": []},
        "openalex2019": {"openalex_id": "W123", "chunks": []},
        "bare2018": {"chunks": []},
    }
    keys = [*papers, "fabricated2024"]
    with session_factory() as db:
        assert resolving(db, papers, keys)["deleted2021"] is None  # still there
    with transaction(session_factory) as db:
        db.execute(delete(Document).where(Document.id == deleted))
    with session_factory() as db:
        why = resolving(db, papers, keys)
    assert why == {
        "kept2020": None,
        "deleted2021": "its library document no longer exists",
        "openalex2019": None,
        "bare2018": "neither a library document nor a validated OpenAlex record",
        "fabricated2024": "no paper with this key was gathered for the survey",
    }


def test_an_unknown_key_gives_no_source_rather_than_a_crash() -> None:
    papers = {"real2020": {"chunks": [{"chunk_id": "c1", "text": "a passage", "locator": "p. 1"}]}}
    assert source_passages("fabricated2024", papers, {}) == []
    assert source_passages("real2020", papers, {}) == [{"locator": "p. 1", "text": "a passage"}]
    paragraphs = [{"text": "A claim [@fabricated2024].", "keys": ["fabricated2024"]}]
    prompt = _claims_prompt({"c1": 0}, paragraphs, papers, {})
    assert prompt == "Claim c1: A claim [@fabricated2024]."
