"""A claim citing a library document marked retracted (by the library's metadata
lookup) goes to "Needs checking" whatever the model says, and the report's
"Citation checks" names the check that failed: ``not retracted ✗``."""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import transaction
from services.common.models import Document, User
from services.worker.survey.verify import _verify_section
from tests.survey.survey_run import block
from tests.survey.test_support import PASSAGE, SUPPORTED, _ctx, _document, _report

WITHDRAWN = "Scientific vocabulary finetuning adds F1 across all datasets"


def test_a_retracted_documents_citation_is_flagged_and_the_check_named(
    session_factory: sessionmaker[Session],
) -> None:
    with transaction(session_factory) as db:
        user = User(email=f"retracted-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        user_id, kept, withdrawn = user.id, _document(db, user.id), _document(db, user.id)
        db.execute(update(Document).where(Document.id == withdrawn).values(retracted=True))
    chunk = [{"chunk_id": "c1", "text": PASSAGE, "locator": "p. 3"}]
    papers = {
        "kept2019": {"document_id": str(kept), "chunks": chunk},
        "wakefield1998": {"document_id": str(withdrawn), "chunks": chunk},
    }
    section = {
        "title": "Vocabulary",
        "written_by": ["writer-model"],
        "paragraphs": [
            {"text": f"{SUPPORTED} [@kept2019].", "keys": ["kept2019"]},
            {"text": f"{WITHDRAWN} [@wakefield1998].", "keys": ["wakefield1998"]},
        ],
    }
    result, _ = _verify_section(_ctx(session_factory, user_id, None), 0, section, papers, {})
    assert [p["text"] for p in result["paragraphs"]] == [f"{SUPPORTED} [@kept2019]."]
    report = _report(result)
    body, _, rest = report.partition("## Needs checking")
    needs_checking, _, checks = rest.partition("## Citation checks")
    assert WITHDRAWN not in body
    (line,) = [ln for ln in needs_checking.splitlines() if WITHDRAWN in ln]
    assert "cites a retracted paper" in line and "marked retracted" in line
    head, check = block(checks, WITHDRAWN)
    assert head.endswith(": needs checking, score 0.00")
    assert check.startswith("  - `wakefield1998`: not checked")
    assert "resolves ✓, not retracted ✗ (its library document is marked retracted)" in check
