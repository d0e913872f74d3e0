"""Turn a PDF into structured blocks: sections, display equations, theorem-like
environments and references, each with its page.

Runs inside the limited child process (see ``isolated``); imports only PyMuPDF.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import pymupdf

from services.library.parsing.layout import Block, body_size, page_blocks


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
REF_MARKER = re.compile(r"(?=\[\d{1,3}\]\s)")


@dataclass
class ParsedBlock:
    page: int
    kind: str  # para | heading | equation | environment | reference
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


class _Walker:
    """Walks blocks in reading order, tracking the section path and environment."""

    def __init__(self, body: float) -> None:
        self.body = body
        self.path: list[str] = []
        self.in_references = False
        self.seen_references = False
        self.env: str | None = None
        self.out: list[ParsedBlock] = []
        self.structure: dict[str, list[Any]] = {
            "sections": [],
            "equations": [],
            "environments": [],
            "references": [],
        }

    def feed(self, block: Block) -> None:
        heading = _heading_level(block, self.body, appendix=self.seen_references)
        if heading is not None:
            self._heading(block, *heading)
            return
        if self.in_references:
            for ref in _split_references(block.text):
                self.structure["references"].append(ref)
                self.out.append(ParsedBlock(block.page, "reference", ref, list(self.path)))
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
        # A plain paragraph ends a theorem statement unless it is a proof's body.
        if self.env and not self.env.startswith("Proof"):
            self.env = None
        self.out.append(ParsedBlock(block.page, "para", block.text, list(self.path), self.env))

    def _heading(self, block: Block, level: int, title: str) -> None:
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
    return max(candidates, key=lambda b: b.size).text


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


def parse_pdf(path: str, *, max_pages: int) -> dict[str, Any]:
    """Parse a PDF into ``{title, pages, blocks, structure}`` (JSON-ready)."""
    doc = open_pdf(path, max_pages=max_pages)
    per_page: list[list[Block]] = []
    for index in range(doc.page_count):
        try:
            per_page.append(page_blocks(doc[index], index + 1))
        except MemoryError:
            raise
        except Exception as exc:  # a damaged content stream or object
            raise PdfRejected(f"damaged PDF: page {index + 1} cannot be read ({exc})") from None
    everything = [b for page in per_page for b in page]
    if not any(len(b.text) > 20 for b in everything):
        raise PdfRejected("no extractable text (scanned or image-only PDF)")
    walker = _Walker(body_size(everything))
    for block in everything:
        walker.feed(block)
    return {
        "title": _title(doc, per_page[0]),
        "pages": doc.page_count,
        "blocks": [asdict(b) for b in walker.out],
        "structure": walker.structure,
    }
