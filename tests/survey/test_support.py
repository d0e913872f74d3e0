"""Verify's model-independent half on a real database: the model calls every claim
"supported", yet an unrelated citation and a deleted document's citation end in
"Needs checking", and the report's "Citation checks" says which checks each
citation passed, which model wrote and verified it, and how the checks ran."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.collections import Collection
from services.common.db import transaction
from services.common.models import Document, User
from services.worker.survey.markdown import render_markdown
from services.worker.survey.structured import Ask, Spent
from services.worker.survey.support import NO_PASSAGE, ClaimChecker, check_section
from services.worker.survey.verify import _verify_section
from services.worker.tools.ports import LibraryEndpoint
from tests.survey.survey_run import block

PASSAGE = (
    "We assess the importance of an in-domain scientific vocabulary by repeating the "
    "finetuning experiments for SCIBERT. Averaged across datasets, we observe +0.60 F1 "
    "when using SCIVOCAB."
)
CLAIM = "An in-domain scientific vocabulary adds +0.60 F1 averaged across datasets [@a]."
SUPPORTED = "An in-domain scientific vocabulary adds +0.60 F1 averaged across datasets"
UNRELATED = "Quantum annealing answers every literature question"
GONE = "Scientific vocabulary finetuning adds F1 across datasets"


class AlwaysSupported:
    """A verifier model that calls every claim supported (the simulator does)."""

    def ask(self, ask: Ask) -> tuple[dict[str, Any], Spent]:
        ids = list(ask.schema["properties"]["verdicts"]["properties"])
        verdicts = {c: {"verdict": "supported", "reason": "it says so"} for c in ids}
        return {"verdicts": verdicts}, Spent(calls=1, models=["judge-model"])


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


def _ctx(factory: sessionmaker[Session], user: uuid.UUID, library: Any) -> Any:
    return SimpleNamespace(
        deps=SimpleNamespace(factory=factory, library=library),
        caller=AlwaysSupported(),
        job=SimpleNamespace(session_id=uuid.uuid4(), user_id=user),
    )


def _verified(factory: sessionmaker[Session], library: Any = None) -> dict[str, Any]:
    with transaction(factory) as db:
        user = User(email=f"support-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        user_id, kept, deleted = user.id, _document(db, user.id), _document(db, user.id)
    chunk = [{"chunk_id": "c1", "text": PASSAGE, "locator": "p. 3"}]
    papers = {
        "kept2019": {"document_id": str(kept), "chunks": chunk},
        "gone2020": {"document_id": str(deleted), "chunks": chunk},
    }
    with transaction(factory) as db:
        db.execute(delete(Document).where(Document.id == deleted))
    section = {
        "title": "Vocabulary",
        "written_by": ["writer-model"],
        "paragraphs": [
            {"text": f"{SUPPORTED} [@kept2019].", "keys": ["kept2019"]},
            {"text": f"{UNRELATED} [@kept2019].", "keys": ["kept2019"]},
            {"text": f"{GONE} [@gone2020].", "keys": ["gone2020"]},
        ],
    }
    result, _ = _verify_section(_ctx(factory, user_id, library), 0, section, papers, {})
    return result


def _report(result: dict[str, Any]) -> str:
    return render_markdown(
        topic="t", plan={"research_questions": ["q"]}, sections=[result], papers=[],
        unresolved_seeds=[],
    )  # fmt: skip


class TestVerifySection:
    def test_the_model_saying_supported_keeps_only_what_the_checks_support(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        result = _verified(session_factory)
        assert [p["text"] for p in result["paragraphs"]] == [f"{SUPPORTED} [@kept2019]."]
        report = _report(result)
        body, _, rest = report.partition("## Needs checking")
        needs_checking = rest.partition("## Citation checks")[0]
        assert SUPPORTED in body and UNRELATED not in body
        (line,) = [ln for ln in needs_checking.splitlines() if UNRELATED in ln]
        assert "shares no content word" in line

    def test_a_deleted_documents_citation_is_flagged_whatever_the_model_says(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        report = _report(_verified(session_factory))
        body, _, rest = report.partition("## Needs checking")
        needs_checking, _, checks = rest.partition("## Citation checks")
        assert GONE not in body
        (line,) = [ln for ln in needs_checking.splitlines() if GONE in ln]
        assert "does not resolve" in line and "its library document no longer exists" in line
        head, check = block(checks, GONE)
        assert head.endswith(": needs checking, score 0.00")
        assert check.startswith("  - `gone2020`: not checked")
        assert "resolves ✗ (its library document no longer exists)" in check

    def test_the_report_names_the_models_and_says_the_checks_ran_lexical_only(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        checks = _report(_verified(session_factory)).partition("## Citation checks")[2]
        assert "Written by writer-model; verified by judge-model" in checks
        assert "no embedding similarity, because the library service is not configured" in checks
        head, kept = block(checks, SUPPORTED)
        assert ": cited, score" in head and kept.startswith("  - `kept2019`: supports it")
        assert "lexical ✓" in kept and "numbers ✓" in kept and "model ✓" in kept
        head, unrelated = block(checks, UNRELATED)
        assert ": needs checking, score" in head
        assert "does not support it alone" in unrelated and "lexical ✗" in unrelated

    def test_an_unreachable_library_falls_back_to_lexical_only_and_says_so(
        self, session_factory: sessionmaker[Session]
    ) -> None:
        nowhere = LibraryEndpoint(url="http://127.0.0.1:9", internal_token="t")
        result = _verified(session_factory, nowhere)
        assert [p["text"] for p in result["paragraphs"]] == [f"{SUPPORTED} [@kept2019]."]
        checks = _report(result).partition("## Citation checks")[2]
        assert "no embedding similarity, because the library service did not answer" in checks


class TestCheckSection:
    def test_a_metadata_only_source_is_flagged_even_beside_a_supporting_one(self) -> None:
        checker = ClaimChecker(None, str(uuid.uuid4()))
        (support,) = check_section([(CLAIM, {"a": [PASSAGE], "b": []}, "supported")], checker)
        assert support["supported"] is False
        assert support["citations"]["b"] == {
            "supported": False,
            "score": 0.0,
            "checks": {},
            "reason": NO_PASSAGE,
        }
        assert f"b: {NO_PASSAGE}" in support["reason"]
        assert support["citations"]["a"]["supported"] is True

    def test_an_unrelated_second_citation_flags_the_claim(self) -> None:
        other = "The Roman legions crossed the Rhine in the spring."
        checker = ClaimChecker(None, str(uuid.uuid4()))
        (support,) = check_section([(CLAIM, {"a": [PASSAGE], "b": [other]}, "supported")], checker)
        assert support["supported"] is False
        assert "b: its passages share no content word with the claim" in support["reason"]

    def test_the_model_can_withdraw_support(self) -> None:
        checker = ClaimChecker(None, str(uuid.uuid4()))
        (support,) = check_section([(CLAIM, {"a": [PASSAGE]}, "unsupported")], checker)
        assert support["supported"] is False
        assert support["citations"]["a"]["checks"]["model"] is False
