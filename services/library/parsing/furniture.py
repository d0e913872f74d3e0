"""Page furniture: running headers and footers, page numbers, margin stamps.

A block in the top or bottom margin whose text (digits ignored) recurs in the
margins of several pages is a running header or footer; a bare page number
in a margin, and arXiv's rotated side stamp, are dropped too. Removing them
keeps "Proceedings of ..." and "Page 7" out of the paragraphs they would
otherwise split.
"""

from __future__ import annotations

import re
from collections import Counter

from services.library.parsing.layout import Block

MARGIN = 0.12  # share of the page height at the top and bottom
PAGE_NUMBER = re.compile(r"^(page\s*)?[\divxlc]{1,5}(\s*(of|/)\s*\d{1,5})?$", re.I)
ARXIV_STAMP = re.compile(r"^arXiv:\d{4}\.\d{4,5}(v\d+)?\s*\[[^\]]+\]", re.I)


def _in_margin(block: Block) -> bool:
    h = block.page_height or 792.0
    return block.y1 <= h * MARGIN or block.y0 >= h * (1 - MARGIN)


def _edge_blocks(page: list[Block]) -> set[int]:
    """Ids of the two topmost and two bottommost margin blocks: where furniture sits."""
    by_y = sorted(page, key=lambda b: b.y0)
    return {id(b) for b in by_y[:2] + by_y[-2:] if _in_margin(b)}


def _shape(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def strip_furniture(per_page: list[list[Block]]) -> list[list[Block]]:
    """The pages without running headers/footers, page numbers and stamps."""
    counts: Counter[str] = Counter()
    edges = [_edge_blocks(page) for page in per_page]
    for page, edge in zip(per_page, edges, strict=True):
        counts.update({_shape(b.text) for b in page if id(b) in edge})
    repeats = max(2, len(per_page) // 4)
    kept: list[list[Block]] = []
    for page, edge in zip(per_page, edges, strict=True):
        out = []
        for b in page:
            text = b.text.strip()
            if ARXIV_STAMP.match(text):
                continue
            if id(b) in edge and (
                PAGE_NUMBER.match(text) or (len(per_page) > 2 and counts[_shape(text)] >= repeats)
            ):
                continue
            out.append(b)
        kept.append(out)
    return kept
