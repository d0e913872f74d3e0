"""The retrieval levers chosen on SciFact (bench/RESULTS.md, "Retrieval levers"),
on tiny real corpora in a real Edge store with the real BM25 encoder.

- Fusion by document (the shipped default): a paper that dense search finds by
  one passage and BM25 by another outranks a paper that both find by one
  middling passage; fused chunk by chunk it would not.
- RM3 feedback: a paper that shares no word with the query, only with the
  passages BM25 ranks first, is found by BM25 once feedback is on, never without.
- Score fusion (z-scores, the shipped default): a retriever's wide score
  margin counts, not only its rank.
- The title as its own BM25 field: query terms match the paper's title in every chunk.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from services.library.fusion import SearchHit
from services.library.lexical import Bm25Encoder, Bm25Params
from services.library.prf import PrfConfig
from services.library.retrieval import FusionConfig, Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store.base import StoredChunk
from services.library.store.edge import EdgeStore

DIM = 4
COLL = "user:levers"
QUERY = np.array([1.0, 0.0, 0.0, 0.0])


class _NoEmbedder:
    """Dense query vectors are handed in; nothing may embed."""

    def encode_query(self, text: str) -> np.ndarray:
        raise AssertionError("the test passes query vectors")


def _vec(cos: float) -> list[float]:
    """A unit vector at cosine ``cos`` to QUERY."""
    return [cos, float(np.sqrt(max(0.0, 1 - cos * cos))), 0.0, 0.0]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    s = EdgeStore(tmp_path / "edge")  # exact dense search: the ranking is known
    s.ensure(DIM)
    yield s
    s.close()


def _put(store: EdgeStore, encoder: Bm25Encoder, rows: list[tuple[str, str, str, float]]) -> None:
    """rows: (document id, title, chunk text, cosine of its vector to QUERY)."""
    chunks = [
        StoredChunk(
            str(uuid.uuid4()),
            _vec(cos),
            encoder.encode_document(text, title=title),
            {"collection": COLL, "document_id": doc, "title": title, "text": text, "ordinal": n},
        )
        for n, (doc, title, text, cos) in enumerate(rows)
    ]
    store.upsert(chunks)


def _retriever(store: EdgeStore, encoder: Bm25Encoder, fusion: FusionConfig) -> Retriever:
    return Retriever(store=store, embedder=_NoEmbedder(), encoder=encoder, fusion=fusion)  # type: ignore[arg-type]


def _papers(retriever: Retriever, query: str, mode: str = "mix") -> list[str]:
    hits = retriever.search(
        query, collections=[COLL], mode=mode, k=10, per_paper_cap=1, query_vector=QUERY
    )
    return [str(h.payload["document_id"]) for h in hits]


SPLIT_PAPER = [
    # paper P: its first passage is what dense search likes best, its second
    # what BM25 likes best; paper X is second in both lists with one passage.
    ("P", "", "alpha beta gamma delta", 1.0),
    ("P", "", "zinc deficiency impairs wound healing", -1.0),
    ("X", "", "zinc supplements and healing", 0.9),
    ("Y", "", "zinc", 0.5),
]


def test_the_shipped_fusion_ranks_a_paper_by_all_its_passages(store: EdgeStore) -> None:
    settings = LibrarySettings(qdrant_url=None)
    encoder = Bm25Encoder(settings.bm25_params())
    _put(store, encoder, SPLIT_PAPER)
    shipped = fusion_config(settings)
    assert shipped.unit == "document"
    assert _papers(_retriever(store, encoder, shipped), "zinc wound healing")[0] == "P"
    # The same lists fused chunk by chunk put X first: P's halves count apart.
    by_chunk = replace(shipped, unit="chunk", method="rrf")
    assert _papers(_retriever(store, encoder, by_chunk), "zinc wound healing")[0] == "X"
    # Search results stay chunks: P's two passages both come back, best first.
    hits = _retriever(store, encoder, shipped).search(
        "zinc wound healing", collections=[COLL], mode="mix", k=10, query_vector=QUERY
    )
    p_texts = [h.payload["text"] for h in hits if h.payload["document_id"] == "P"]
    assert len(p_texts) == 2


MARGIN = [
    # Dense search puts A far ahead of everything; BM25 puts B just ahead of A.
    ("A", "", "zinc", 0.95),
    ("B", "", "zinc zinc healing", 0.30),
    ("C", "", "zinc healing", 0.28),
    *[(f"N{i}", "", "unrelated words here", 0.25) for i in range(5)],
]


def test_the_shipped_fusion_counts_a_wide_score_margin(store: EdgeStore) -> None:
    settings = LibrarySettings(qdrant_url=None)
    encoder = Bm25Encoder(settings.bm25_params())
    _put(store, encoder, MARGIN)
    shipped = fusion_config(settings)
    assert shipped.method == "zscore"
    assert _papers(_retriever(store, encoder, shipped), "zinc healing")[0] == "A"
    # By rank alone (RRF) B's narrow BM25 lead outweighs A's wide dense one.
    by_rank = replace(shipped, method="rrf")
    assert _papers(_retriever(store, encoder, by_rank), "zinc healing")[0] == "B"


FEEDBACK = [
    # The query's words occur only in F1 and F2, which also talk about hypoxia;
    # R is about hypoxia and erythropoietin but never says "altitude".
    ("F1", "", "altitude training raises hypoxia erythropoietin response", 0.0),
    ("F2", "", "altitude sickness and hypoxia erythropoietin levels", 0.0),
    ("R", "", "hypoxia induces erythropoietin erythropoietin hypoxia", 0.0),
    ("N", "", "cardiac output in marathon runners", 0.0),
    ("N2", "", "protein folding in yeast cells", 0.0),
]


def test_rm3_feedback_finds_a_paper_without_the_query_words(store: EdgeStore) -> None:
    encoder = Bm25Encoder(Bm25Params())
    _put(store, encoder, FEEDBACK)
    off = FusionConfig(prf=PrfConfig(docs=0))
    assert "R" not in _papers(_retriever(store, encoder, off), "altitude", mode="keyword")
    on = FusionConfig(prf=PrfConfig(docs=2, terms=5, weight=0.5))
    found = _papers(_retriever(store, encoder, on), "altitude", mode="keyword")
    assert found[:2] == ["F1", "F2"] or found[:2] == ["F2", "F1"]  # originals stay on top
    assert "R" in found and "N" not in found


def test_title_field_matches_query_terms_in_the_title(store: EdgeStore) -> None:
    params = Bm25Params(title_mode="field", title_weight=1.0)
    encoder = Bm25Encoder(params)
    _put(
        store,
        encoder,
        [
            ("T", "Melatonin and sleep", "a randomised trial in adults", 0.0),
            ("U", "Caffeine", "coffee intake in adults", 0.0),
        ],
    )
    assert _papers(_retriever(store, encoder, FusionConfig()), "melatonin", mode="keyword") == ["T"]
    # Without the field the title is invisible to BM25 (title weight 0).
    plain = Bm25Encoder(Bm25Params(title_mode="field", title_weight=0.0))
    assert plain.encode_query("melatonin").indices == [plain.term_id("melatonin")]


def test_survey_and_write_modes_leave_out_reference_lists() -> None:
    """A survey note or a citable statement never rests on a paper's bibliography."""
    hits = [
        SearchHit("1", 2.0, {"kind": "reference", "text": "[39] Yao Lu et al. 2020."}),
        SearchHit("2", 1.0, {"kind": "text", "text": "Multi-LexSum summaries are expert-written."}),
    ]
    for mode in ("survey", "write"):
        assert [h.id for h in Retriever._shape(list(hits), mode)] == ["2"], mode
    assert [h.id for h in Retriever._shape(list(hits), "mix")] == ["1", "2"]
