"""Turn a PDF into structured blocks: sections, display equations, theorem-like
environments and references, each with its page.

Runs inside the limited child process (see ``isolated``); imports only PyMuPDF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from services.library.metadata.extract import extract_metadata
from services.library.parsing.furniture import strip_furniture
from services.library.parsing.layout import Block, body_size, join_hyphenated, page_blocks
from services.library.parsing.tables import TableBudget, with_tables


class PdfRejected(Exception):
    """The file is not a PDF we will parse; the message is shown to the user."""


NUMBERED_HEADING = re.compile(r"^((?:\d{1,2}|[A-H])(?:\.\d{1,2}){0,3})\.?\s+([A-Z][^\n]{1,90})$")
NAMED_HEADINGS = re.compile(
    r"^(abstract|introduction|related work|background|method(s|ology)?|experiments?|results|"
    r"discussion|conclusions?|limitations|ethics statement|acknowledge?ments?|references|"
    r"bibliography|appendix(\s+[A-Z])?)$",
    re.I,
)
REFERENCE_HEADINGS = re.compile(r"^(references|bibliography)$", re.I)
ENV = re.compile(
    r"^(Theorem|Lemma|Definition|Proposition|Corollary|Proof|Assumption)"
    r"(\s+\d+(?:\.\d+)*)?\s*(\([^)]{0,80}\))?\s*[.:]",
)
EQ_NUMBER = re.compile(r"\((\d{1,3}[a-z]?)\)\s*$")
REF_MARKER = re.compile(r"(?=(?:\[\d{1,3}\]|\(\d{1,3}\))\s)")
REF_START = re.compile(r"^(?:\[\d{1,3}\]|\(\d{1,3}\)|\d{1,3}\.)\s")
CAPTION = re.compile(r"^(Figure|Fig\.|Table|Algorithm)\s*(\d{1,2}|[A-Z]\.?\d{1,2})\s*[.:|]")
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.I)


@dataclass
class ParsedBlock:
    page: int
    kind: str  # para | heading | equation | environment | reference | caption | table
    text: str
    section: list[str] = field(default_factory=list)
    env: str | None = None  # "Theorem 2", "Proof", …
    equation: str | None = None  # "(3)" when numbered


def _heading_level(block: Block, body: float, *, appendix: bool) -> tuple[int, str] | None:
    text = block.text.strip()
    styled = block.bold >= 0.6 or block.size >= body + 0.9
    if not styled or len(text) > 100 or text.endswith((",", ";")):
        return None
    m = NUMBERED_HEADING.match(text)
    # Letter sections ("B Proofs") only after the references, where appendices live;
    # elsewhere "D White" is an author line.
    letter = m is not None and m.group(1)[0].isalpha() and not appendix
    if m and not letter and not re.search(r"\d{4}", m.group(2)):  # a year: a reference
        return m.group(1).count(".") + 1, f"{m.group(1)} {m.group(2).strip()}"
    if NAMED_HEADINGS.match(text):
        return 1, text
    return None


def _is_equation(block: Block) -> str | None:
    """Display equations: short math-heavy blocks, or blocks ending in an equation number."""
    text = block.text
    if len(text) > 400:
        return None
    numbered = EQ_NUMBER.search(text)
    if numbered and (block.math >= 0.08 or "=" in text):
        return f"({numbered.group(1)})"
    if block.math >= 0.45 and len(text) >= 3:
        return ""
    return None


def _split_references(text: str) -> list[str]:
    parts = [p.strip() for p in REF_MARKER.split(text) if p.strip()]
    return parts or [text]


def _is_table(block: Block) -> bool:
    """Table cells: short lines dominated by numbers (PyMuPDF gives a table as such blocks)."""
    text = block.text
    if len(text) > 400:
        return False
    digits = sum(map(str.isdigit, text))
    return digits >= 4 and digits >= sum(map(str.isalpha, text)) * 0.6


def assemble_references(blocks: list[Block]) -> list[tuple[int, str]]:
    """Reference entries from the reference section's blocks: (page, text).

    PyMuPDF often cuts an entry in two at its hanging indent, and puts several
    entries in one block. Numbered styles start each entry with a marker;
    author-year styles start it at the column's left edge, continuation lines
    indented.
    """
    numbered = sum(bool(REF_START.match(b.text)) for b in blocks) >= max(2, len(blocks) // 4)
    edges: dict[tuple[int, bool], float] = {}
    for b in blocks:
        key = (b.page, b.x0 > 250)
        edges[key] = min(edges.get(key, b.x0), b.x0)
    entries: list[list[Any]] = []
    for b in blocks:
        if numbered:
            starts = bool(REF_START.match(b.text))
        else:
            starts = b.x0 <= edges[(b.page, b.x0 > 250)] + 3
        if entries and not starts:
            entries[-1][1] = join_hyphenated(entries[-1][1], b.text.strip())
        else:
            entries.append([b.page, b.text.strip()])
    out: list[tuple[int, str]] = []
    for page, text in entries:
        out.extend((page, part) for part in _split_references(text))
    return out


class _Walker:
    """Walks blocks in reading order, tracking the section path and environment."""

    def __init__(self, body: float) -> None:
        self.body = body
        self.path: list[str] = []
        self.in_references = False
        self.seen_references = False
        self.env: str | None = None
        self.out: list[ParsedBlock] = []
        self.structure: dict[str, Any] = {
            "sections": [],
            "equations": [],
            "environments": [],
            "references": [],
            "captions": [],
        }
        self._refs: list[Block] = []

    def feed(self, block: Block) -> None:
        if block.table is not None:  # a detected table, its caption first (tables.py)
            head = block.text.split("\n\n", 1)[0]
            self.structure["captions"].append(
                {"label": block.table, "page": block.page, "text": head[:300]}
            )
            self.out.append(
                ParsedBlock(block.page, "table", block.text, list(self.path), block.table)
            )
            return
        heading = _heading_level(block, self.body, appendix=self.seen_references)
        if heading is not None:
            self._heading(block, *heading)
            return
        if self.in_references:
            self._refs.append(block)
            return
        caption = CAPTION.match(block.text)
        if caption:
            name = f"{'Figure' if caption.group(1).startswith('Fig') else caption.group(1)} "
            name += caption.group(2).rstrip(".")
            self.structure["captions"].append(
                {"label": name, "page": block.page, "text": block.text[:300]}
            )
            self.out.append(ParsedBlock(block.page, "caption", block.text, list(self.path), name))
            return
        env = ENV.match(block.text)
        if env:
            self.env = (env.group(1) + (env.group(2) or "")).strip()
            self.structure["environments"].append(
                {"label": self.env, "kind": env.group(1), "page": block.page}
            )
            self.out.append(
                ParsedBlock(block.page, "environment", block.text, list(self.path), self.env)
            )
            return
        label = _is_equation(block)
        if label is not None:
            self.structure["equations"].append(
                {"label": label or None, "page": block.page, "text": block.text[:200]}
            )
            self.out.append(
                ParsedBlock(block.page, "equation", block.text, list(self.path), self.env, label)
            )
            return
        last = self.out[-1] if self.out else None
        # Row labels ("Bio", "NER") between number rows belong to the table too.
        cell = (
            last is not None
            and last.kind == "table"
            and last.env is None
            and last.page == block.page
        )
        if _is_table(block) or (cell and len(block.text) < 40):
            self.out.append(ParsedBlock(block.page, "table", block.text, list(self.path)))
            return
        # A plain paragraph ends a theorem statement unless it is a proof's body.
        if self.env and not self.env.startswith("Proof"):
            self.env = None
        if (
            last is not None
            and last.kind == "para"
            and last.env == self.env
            and last.section == self.path
            and last.text.endswith("-")
            and block.text[:1].islower()
        ):
            # A word hyphenated across a column or page break.
            last.text = join_hyphenated(last.text, block.text)
            return
        self.out.append(ParsedBlock(block.page, "para", block.text, list(self.path), self.env))

    def flush_references(self) -> None:
        if not self._refs:
            return
        for page, ref in assemble_references(self._refs):
            self.structure["references"].append(ref)
            self.out.append(ParsedBlock(page, "reference", ref, list(self.path)))
        self._refs = []

    def _heading(self, block: Block, level: int, title: str) -> None:
        self.flush_references()
        self.path = self.path[: level - 1] + [title]
        self.env = None
        self.in_references = bool(REFERENCE_HEADINGS.match(title))
        self.seen_references = self.seen_references or self.in_references
        self.structure["sections"].append({"path": " > ".join(self.path), "page": block.page})
        self.out.append(ParsedBlock(block.page, "heading", title, list(self.path)))


def _title(doc: Any, first_page: list[Block]) -> str | None:
    meta = (doc.metadata or {}).get("title") or ""
    if len(meta.strip()) > 8 and not re.search(r"untitled|\.(tex|dvi|docx?)$", meta, re.I):
        return meta.strip()
    candidates = [
        b for b in first_page if 8 <= len(b.text) <= 300 and not b.text.startswith("arXiv:")
    ]
    if not candidates:
        return None
    top = max(candidates, key=lambda b: b.size)
    # A title set on two or three lines comes as adjacent blocks of the same size.
    start = first_page.index(top)
    parts = [top.text]
    for block in first_page[start + 1 : start + 3]:
        if abs(block.size - top.size) > 0.5 or block.y0 - top.y1 > top.size * 3:
            break
        parts.append(block.text)
    return " ".join(parts)


def _own_doi(first_page: list[Block]) -> str | None:
    """The paper's own DOI, when its first page prints one."""
    for b in first_page:
        m = DOI.search(b.text)
        if m:
            return m.group(1).rstrip(".,;)").lower()
    return None


def open_pdf(path: str, *, max_pages: int) -> Any:
    """Open and vet a PDF; raise PdfRejected with a user-facing reason."""
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # MuPDF raises its own types for broken files
        raise PdfRejected(f"not a readable PDF: {exc}") from None
    if doc.needs_pass or doc.is_encrypted:
        raise PdfRejected("encrypted PDF: a password is required to read it")
    if doc.page_count == 0:
        raise PdfRejected("the PDF has no pages (truncated or damaged file)")
    if doc.page_count > max_pages:
        raise PdfRejected(f"too many pages: {doc.page_count} (limit {max_pages})")
    return doc


def parse_pdf(path: str, *, max_pages: int, tables: bool = True) -> dict[str, Any]:
    """Parse a PDF into ``{title, pages, blocks, structure, metadata}`` (JSON-ready).

    ``tables=False`` skips table detection (``tables.py``; the bench's baseline).
    """
    doc = open_pdf(path, max_pages=max_pages)
    per_page: list[list[Block]] = []
    budget = TableBudget()
    for index in range(doc.page_count):
        try:
            blocks = page_blocks(doc[index], index + 1)
            per_page.append(with_tables(doc[index], blocks, budget) if tables else blocks)
        except MemoryError:
            raise
        except Exception as exc:  # a damaged content stream or object
            raise PdfRejected(f"damaged PDF: page {index + 1} cannot be read ({exc})") from None
    per_page = strip_furniture(per_page)
    everything = [b for page in per_page for b in page]
    if not any(len(b.text) > 20 for b in everything):
        raise PdfRejected("no extractable text (scanned or image-only PDF)")
    walker = _Walker(body_size(everything))
    for block in everything:
        walker.feed(block)
    walker.flush_references()
    walker.structure["doi"] = _own_doi(per_page[0])
    return {
        "title": _title(doc, per_page[0]),
        "pages": doc.page_count,
        "blocks": [vars(b) for b in walker.out],  # flat dataclasses: asdict's deep copy is slow
        "structure": walker.structure,
        # Authors, year, venue, identifiers, each with its source (services/library/metadata).
        "metadata": extract_metadata(doc, per_page[0]),
    }
