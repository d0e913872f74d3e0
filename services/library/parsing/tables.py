"""Tables found with PyMuPDF's ``find_tables`` and kept as Markdown with their caption.

Guarantee: on a page that prints a table caption ("Table 3: …"), a table whose
region is bounded by horizontal rules next to that caption becomes **one**
block holding the caption, a blank line and a Markdown table (``| a | b |``);
the text blocks inside the region and the caption block are removed from the
page, so no flattened copy of the table reaches the running text.

Why this shape:

- PyMuPDF's default ``lines`` strategy needs a full grid; LaTeX tables
  (booktabs) have horizontal rules only, so on the shared papers it found
  figures and no real table. The ``text`` strategy clipped to the rule-bounded
  region next to a caption reads them row by row. Its layout-model gate
  (``use_layout``) runs an ONNX model: ~1 page/s, so it is off.
- Cost: ``find_tables`` costs ~0.1 s per region (more than reading the page's
  text), so it runs only on pages with a table caption, at most
  ``MAX_TABLE_PAGES`` pages and ``MAX_REGIONS_PER_PAGE`` regions per page.
  ``parse_pdf(..., tables=False)`` skips detection (the bench's baseline).
- A region that reads as fewer than two rows or two columns, or is mostly
  empty cells, is left to the running text (the older number-block
  heuristic in ``pdf_structure`` still marks it ``table``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pymupdf

from services.common.ligatures import fold_ligatures
from services.library.parsing.layout import Block

TABLE_CAPTION = re.compile(r"^(Table|Tab\.)\s*(\d{1,2}|[A-Z]\.?\d{1,2})\s*[.:|]")
MAX_TABLE_PAGES = 60
MAX_REGIONS_PER_PAGE = 4
CAPTION_GAP = 40.0  # points between a caption and its table's outer rule
MIN_FILL = 0.3  # share of non-empty cells below which a "table" is noise


@dataclass
class TableBudget:
    """Pages of one document that may still run table detection."""

    pages_left: int = MAX_TABLE_PAGES
    found: int = 0


Region = tuple[float, float, float, float]


def _rules(drawings: list[dict[str, Any]]) -> list[tuple[float, float, float]]:
    """Horizontal rules (x0, y, x1) at least 40 pt wide: lines and hairline rectangles."""
    out = []
    for d in drawings:
        for item in d.get("items", ()):
            if item[0] == "l":
                p, q = item[1], item[2]
                if abs(p.y - q.y) < 1.5 and abs(p.x - q.x) > 40:
                    out.append((min(p.x, q.x), (p.y + q.y) / 2, max(p.x, q.x)))
            elif item[0] == "re":
                r = item[1]
                if r.height < 2 and r.width > 40:
                    out.append((r.x0, (r.y0 + r.y1) / 2, r.x1))
    return out


def rule_regions(drawings: list[dict[str, Any]]) -> list[Region]:
    """Boxes spanned by two or more rules of the same width (a table's top and bottom rule)."""
    groups: dict[tuple[float, float], list[float]] = {}
    for x0, y, x1 in _rules(drawings):
        key = next((k for k in groups if abs(k[0] - x0) < 3 and abs(k[1] - x1) < 3), (x0, x1))
        groups.setdefault(key, []).append(y)
    return [
        (k[0], min(ys), k[1], max(ys))
        for k, ys in groups.items()
        if len(ys) >= 2 and max(ys) - min(ys) > 15
    ]


def _region_for(caption: Block, regions: list[Region]) -> Region | None:
    """The rule region right above or below the caption, overlapping it horizontally."""
    best: tuple[float, Region] | None = None
    for r in regions:
        overlap = min(caption.x1, r[2]) - max(caption.x0, r[0])
        if overlap < 0.3 * min(caption.x1 - caption.x0, r[2] - r[0]):
            continue
        below = r[1] - caption.y1  # caption above the table
        above = caption.y0 - r[3]  # caption below the table
        gap = min(g for g in (below, above, 1e9) if g >= -2)
        if gap <= CAPTION_GAP and (best is None or gap < best[0]):
            best = (gap, r)
    return None if best is None else best[1]


def _cell(text: str | None) -> str:
    return " ".join(fold_ligatures(text or "").split()).replace("|", "\\|")


def clean_rows(raw: list[list[str | None]]) -> list[list[str]] | None:
    """Rows without empty rows and columns; None when it does not read as a table."""
    rows = [[_cell(c) for c in row] for row in raw]
    rows = [r for r in rows if any(r)]
    if not rows:
        return None
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [i for i in range(width) if any(r[i] for r in rows)]
    rows = [[r[i] for i in keep] for r in rows]
    cells = len(rows) * len(keep)
    if len(rows) < 2 or len(keep) < 2 or sum(bool(c) for r in rows for c in r) < MIN_FILL * cells:
        return None
    return rows


def to_markdown(rows: list[list[str]]) -> str:
    """A GitHub-style Markdown table, the first row as its header."""
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _cell_texts(table: Any, words: list[tuple[Any, ...]]) -> list[list[str | None]]:
    """Each cell's words in reading order. ``Table.extract()`` joins characters
    itself and on the shared papers dropped spaces and moved decimal points
    ("90.01" read "9001 ."); the page's own words keep both."""
    rows: list[list[str | None]] = []
    for row in table.rows:
        cells: list[str | None] = []
        for box in row.cells:
            if box is None:
                cells.append(None)
                continue
            x0, y0, x1, y1 = box
            inside = [
                w for w in words if x0 <= (w[0] + w[2]) / 2 < x1 and y0 <= (w[1] + w[3]) / 2 < y1
            ]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))
            cells.append(" ".join(str(w[4]) for w in inside))
        rows.append(cells)
    return rows


def _read_region(page: Any, region: Region) -> str | None:
    clip = pymupdf.Rect(region[0] - 2, region[1] - 2, region[2] + 2, region[3] + 2)
    finder = page.find_tables(clip=clip, use_layout=False, strategy="text")
    tables = list(finder.tables) if finder else []
    if not tables:
        return None
    # Several pieces in one rule region: the one with the most cells is the table.
    table = max(tables, key=lambda t: t.row_count * t.col_count)
    rows = clean_rows(_cell_texts(table, page.get_text("words", clip=clip)))
    return None if rows is None else to_markdown(rows)


def _label(caption: Block) -> str:
    m = TABLE_CAPTION.match(caption.text)
    return f"Table {m.group(2).rstrip('.')}" if m else "Table"


def _inside(block: Block, region: Region) -> bool:
    cx, cy = (block.x0 + block.x1) / 2, (block.y0 + block.y1) / 2
    return region[0] - 2 <= cx <= region[2] + 2 and region[1] - 2 <= cy <= region[3] + 2


def with_tables(page: Any, blocks: list[Block], budget: TableBudget) -> list[Block]:
    """``blocks`` (one page, reading order) with each detected table and its caption
    replaced by one table block at the table's place in reading order."""
    captions = [b for b in blocks if TABLE_CAPTION.match(b.text)]
    if not captions or budget.pages_left <= 0:
        return blocks
    budget.pages_left -= 1
    regions = rule_regions(page.get_drawings())
    replaced: dict[int, Block] = {}  # index of the table's first block -> table block
    gone: set[int] = set()
    for caption in captions[:MAX_REGIONS_PER_PAGE]:
        region = _region_for(caption, regions)
        if region is None:
            continue
        markdown = _read_region(page, region)
        if markdown is None:
            continue
        regions.remove(region)
        members = [i for i, b in enumerate(blocks) if b is caption or _inside(b, region)]
        gone.update(members)
        budget.found += 1
        replaced[members[0]] = Block(
            page=caption.page,
            text=f"{caption.text.strip()}\n\n{markdown}",
            size=caption.size,
            bold=0.0,
            math=0.0,
            x0=min(caption.x0, region[0]),
            x1=max(caption.x1, region[2]),
            y0=min(caption.y0, region[1]),
            y1=max(caption.y1, region[3]),
            page_height=caption.page_height,
            lines=markdown.count("\n") + 1,
            table=_label(caption),
        )
    if not replaced:
        return blocks
    out: list[Block] = []
    for i, block in enumerate(blocks):
        if i in replaced:
            out.append(replaced[i])
        elif i not in gone:
            out.append(block)
    return out
