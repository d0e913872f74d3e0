"""Block-level features of a PyMuPDF page: text, font size, bold and math share.

Kept free of structure decisions so the rules in ``pdf_structure`` read as rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# TeX and Office math fonts; CMR (TeX roman) is body text, so it is not listed.
MATH_FONT = re.compile(r"CMMI|CMSY|CMEX|MSBM|MSAM|Math|Symbol|STIX|rsfs|EUFM|LMMath", re.I)
MATH_CHARS = set("=+−×÷∑∏∫∂∇≤≥≈≠∈∉∀∃→←⇒⇔∞√±αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩ^_")


@dataclass
class Block:
    page: int  # 1-based
    text: str
    size: float
    bold: float  # share of characters in a bold face
    math: float  # share of characters in a math font or math symbols
    x0: float
    x1: float


def _is_bold(span: dict[str, Any]) -> bool:
    font = str(span.get("font", ""))
    return bool(int(span.get("flags", 0)) & 16) or bool(
        re.search(r"Bold|Medi|Semibold|Heavy|Black|CMBX", font)
    )


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out.endswith("-") and line[:1].islower():
            out = out[:-1] + line  # undo end-of-line hyphenation
        else:
            out = f"{out} {line}" if out else line
    return out


def page_blocks(page: Any, page_no: int) -> list[Block]:
    """Text blocks of one page in the PDF's reading order."""
    blocks: list[Block] = []
    for raw in page.get_text("dict")["blocks"]:
        if raw.get("type") != 0:
            continue
        lines: list[str] = []
        chars = bold = math = 0
        size_sum = 0.0
        for line in raw["lines"]:
            lines.append("".join(s["text"] for s in line["spans"]))
            for span in line["spans"]:
                n = len(span["text"].strip())
                chars += n
                size_sum += n * float(span["size"])
                bold += n if _is_bold(span) else 0
                if MATH_FONT.search(str(span.get("font", ""))):
                    math += n
                else:
                    math += sum(1 for c in span["text"] if c in MATH_CHARS)
        text = _join_lines(lines)
        if not text or chars == 0:
            continue
        x0, _, x1, _ = raw["bbox"]
        blocks.append(
            Block(page_no, text, size_sum / chars, bold / chars, min(1.0, math / chars), x0, x1)
        )
    return blocks


def body_size(blocks: list[Block]) -> float:
    """The most common font size by characters: the paper's body text."""
    weights: dict[float, int] = {}
    for b in blocks:
        key = round(b.size * 2) / 2
        weights[key] = weights.get(key, 0) + len(b.text)
    return max(weights, key=lambda k: weights[k]) if weights else 10.0
