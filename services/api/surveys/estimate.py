"""How much a survey will cost, before it starts.

The count follows the pipeline: one plan call, one note per paper (the
library's ready documents plus seeds, capped by the length), one outline, one
section and one check per section. Tokens per call follow the prompts' sizes
(a note's prompt holds the paper's passages). Every call may need one repair,
which is not counted: the figure is what a well-behaved model costs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.common.contracts.collections import Collection
from services.common.contracts.statuses import DocumentStatus
from services.common.documents.collections import (
    LAB_COLLECTION,
)
from services.common.models import Document, SpendRecord
from services.common.surveys import CHUNK_CHARS, CHUNKS_PER_PAPER, shape_for

CHARS_PER_TOKEN = 3
# US$ per token (input, output) when the spend ledger has no history yet: the
# worker's default price for an unpriced model ($0.20 / $0.60 per Mtok).
FALLBACK_USD_PER_TOKEN = (Decimal("0.0000002"), Decimal("0.0000006"))


@dataclass(frozen=True)
class Calls:
    count: int
    input_tokens: int
    output_tokens: int


def library_papers(db: Session, *, user_id: uuid.UUID, project_id: uuid.UUID | None) -> int:
    collections = [Collection.personal(user_id), LAB_COLLECTION]
    if project_id is not None:
        collections.append(Collection.project(project_id))
    return int(
        db.scalar(
            select(func.count())
            .select_from(Document)
            .where(Document.collection.in_(collections), Document.status == DocumentStatus.READY)
        )
        or 0
    )


def survey_calls(*, papers: int, length: str) -> Calls:
    shape = shape_for(length)
    note_in = (CHUNKS_PER_PAPER * CHUNK_CHARS) // CHARS_PER_TOKEN + 400
    section_in = 600 + 250 * max(1, papers // max(1, shape.sections))
    section_out = shape.words_per_section * 2
    parts = [
        (1, 400, 300),  # plan
        (papers, note_in, 500),  # read
        (1, 400 + 200 * papers, 150 * shape.sections),  # outline
        (shape.sections, section_in, section_out),  # write
        (shape.sections, section_out + 400 * max(1, papers // shape.sections), 250),  # verify
    ]
    return Calls(
        count=sum(n for n, _, _ in parts),
        input_tokens=sum(n * i for n, i, _ in parts),
        output_tokens=sum(n * o for n, _, o in parts),
    )


def usd_per_token(db: Session) -> tuple[Decimal, Decimal]:
    """(input, output) US$ per token: the lab's own average, else the default price."""
    spent, tokens_in, tokens_out = db.execute(
        select(
            func.sum(SpendRecord.cost_usd),
            func.sum(SpendRecord.input_tokens),
            func.sum(SpendRecord.output_tokens),
        )
    ).one()
    if spent is None or not (tokens_in or tokens_out):
        return FALLBACK_USD_PER_TOKEN
    # One blended rate: the ledger does not split cost into input and output.
    rate = Decimal(spent) / Decimal(int(tokens_in or 0) + int(tokens_out or 0))
    return rate, rate


def survey_cost(db: Session, calls: Calls) -> float:
    per_in, per_out = usd_per_token(db)
    return round(float(per_in * calls.input_tokens + per_out * calls.output_tokens), 6)


def survey_figures(
    db: Session,
    *,
    user_id: uuid.UUID,
    project_id: uuid.UUID | None,
    length: str,
    seeds: int,
) -> tuple[Calls, int, float]:
    """(calls, papers, cost) of a survey: the library's ready papers plus the seeds,
    capped by the length's paper count."""
    in_library = library_papers(db, user_id=user_id, project_id=project_id)
    papers = min(in_library + seeds, shape_for(length).max_papers)
    calls = survey_calls(papers=max(papers, 1), length=length)
    return calls, papers, survey_cost(db, calls)
