"""Block-level features of a PyMuPDF page (text, font size, bold and math
share, position) and the page's reading order.

Kept free of structure decisions so the rules in ``pdf_structure`` read as rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pymupdf

from services.common.hyphenation import join_broken_word
from services.common.ligatures import fold_ligatures

# TeX and Office math fonts; CMR (TeX roman) is body text, so it is not listed.
MATH_FONT = re.compile(r"CMMI|CMSY|CMEX|MSBM|MSAM|Math|Symbol|STIX|rsfs|EUFM|LMMath", re.I)
MATH_CHARS = set("=+−×÷∑∏∫∂∇≤≥≈≠∈∉∀∃→←⇒⇔∞√±αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩ^_")
MATH_CHAR = re.compile("[" + re.escape("".join(sorted(MATH_CHARS))) + "]")
BOLD_FONT = re.compile(r"Bold|Medi|Semibold|Heavy|Black|CMBX")
# Text only: PyMuPDF's default for "dict" also decodes every image, which made
# extraction ~8x slower than plain get_text() on the shared papers.
TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
)


@dataclass
class Block:
    page: int  # 1-based
    text: str
    size: float
    bold: float  # share of characters in a bold face
    math: float  # share of characters in a math font or math symbols
    x0: float
    x1: float
    y0: float = 0.0
    y1: float = 0.0
    page_height: float = 792.0
    lines: int = 1
    table: str | None = None  # "Table 3" on a block that is a whole detected table (tables.py)


@lru_cache(maxsize=4096)
def _font_traits(font: str) -> tuple[bool, bool]:
    """(bold, math) by font name: a paper has few fonts and many spans."""
    return bool(BOLD_FONT.search(font)), bool(MATH_FONT.search(font))


# Line-end hyphenation rules live next to the ligatures (shared with pdf_child).
join_hyphenated = join_broken_word


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        line = line.strip()
        if line:
            out = join_hyphenated(out, line)
    return out


def _block(raw: dict[str, Any], page_no: int, height: float) -> Block | None:
    lines: list[str] = []
    plain: list[str] = []  # text in text fonts, searched once for math symbols
    chars = bold = math = 0
    size_sum = 0.0
    for line in raw["lines"]:
        spans = line["spans"]
        lines.append(fold_ligatures("".join(s["text"] for s in spans)))
        for span in spans:
            span_text = span["text"]
            n = len(span_text.strip())
            chars += n
            size_sum += n * span["size"]
            bold_font, math_font = _font_traits(span["font"])
            if bold_font or span["flags"] & 16:
                bold += n
            if math_font:
                math += n
            else:
                plain.append(span_text)
    math += len(MATH_CHAR.findall("".join(plain)))
    text = _join_lines(lines)
    if not text or chars == 0:
        return None
    x0, y0, x1, y1 = raw["bbox"]
    return Block(
        page_no,
        text,
        size_sum / chars,
        bold / chars,
        min(1.0, math / chars),
        x0,
        x1,
        y0,
        y1,
        height,
        len(lines),
    )


def reading_order(blocks: list[Block], width: float) -> list[Block]:
    """Two-column pages read left column, then right, band by band.

    A block wider than a column (title, abstract, full-width figure) closes a
    band; within a band the left column's blocks come before the right's,
    each top to bottom. One-column pages keep top-to-bottom order.
    """
    mid = width / 2
    left = [b for b in blocks if b.x1 <= mid + 10]
    right = [b for b in blocks if b.x0 >= mid - 10]
    if len(left) < 2 or len(right) < 2:
        return sorted(blocks, key=lambda b: (round(b.y0), b.x0))
    out: list[Block] = []
    band: list[Block] = []
    for block in sorted(blocks, key=lambda b: (b.y0, b.x0)):
        spanning = block.x0 < mid - 10 and block.x1 > mid + 10
        if spanning:
            out.extend(_band(band, mid))
            band = []
            out.append(block)
        else:
            band.append(block)
    out.extend(_band(band, mid))
    return out


def _band(band: list[Block], mid: float) -> list[Block]:
    left = [b for b in band if (b.x0 + b.x1) / 2 < mid]
    right = [b for b in band if (b.x0 + b.x1) / 2 >= mid]
    return sorted(left, key=lambda b: b.y0) + sorted(right, key=lambda b: b.y0)


def page_blocks(page: Any, page_no: int) -> list[Block]:
    """Text blocks of one page in reading order."""
    rect = page.rect
    blocks = []
    for raw in page.get_text("dict", flags=TEXT_FLAGS)["blocks"]:
        if raw.get("type") != 0:
            continue
        block = _block(raw, page_no, float(rect.height))
        if block is not None:
            blocks.append(block)
    return reading_order(blocks, float(rect.width))


def body_size(blocks: list[Block]) -> float:
    """The most common font size by characters: the paper's body text."""
    weights: dict[float, int] = {}
    for b in blocks:
        key = round(b.size * 2) / 2
        weights[key] = weights.get(key, 0) + len(b.text)
    return max(weights, key=lambda k: weights[k]) if weights else 10.0
