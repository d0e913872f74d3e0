"""Typographic ligatures folded back into their letters.

PDFs set by TeX and Word often store "ﬁ", "ﬂ", "ﬃ" as one code point. Kept, they
break keyword search ("efficient" never matches "eﬃcient"), quoting and citation
matching. Only the Latin ligatures of Unicode's Alphabetic Presentation Forms are
folded: a whole-text NFKC would also rewrite the maths (superscripts, ℝ, ﬁ-like
symbols in formulas), which the library keeps as written.
"""

from __future__ import annotations

LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)


def fold_ligatures(text: str) -> str:
    """``text`` with ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ written out as letters."""
    return text.translate(LIGATURES)
