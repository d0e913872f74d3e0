"""Reading PDFs well: columns in reading order, running headers and footers
removed, hyphenation joined, captions and tables kept as such, reference
entries assembled and structured, locators on every chunk.

The PDFs are built here with PyMuPDF, written in an order that differs from
reading order, so the parser must reorder them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf

from services.library.chunking import chunk_blocks
from services.library.parsing.pdf_structure import parse_pdf
from services.library.references import normalise, parse_reference
from tests.library.conftest import PDF_DIR

HEADER = "Journal of Reproducible Tests, Vol. 3"
LEFT = [
    "The left column opens the argument: quasi-convex flows converge under bounded curvature.",
    "It continues with the energy estimate, which holds for every compact manifold we experi-",
]
RIGHT = [
    "mented with, and closes the left column's sentence in the right column of the page.",
    "The right column then states the main corollary for flows with small initial energy.",
]


def _textbox(page: Any, rect: tuple[float, float, float, float], text: str, size: float) -> None:
    assert page.insert_textbox(pymupdf.Rect(*rect), text, fontsize=size, fontname="helv") >= 0


def two_column_paper(path: Path, pages: int = 4) -> Path:
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page(width=612, height=792)
        # Furniture first in the stream, right column before the left one.
        _textbox(page, (72, 30, 540, 50), f"{HEADER}", 8)
        _textbox(page, (290, 750, 330, 770), f"{n}", 8)
        for i, text in enumerate(RIGHT):
            _textbox(page, (320, 100 + i * 120, 540, 200 + i * 120), f"{text} (page {n})", 10)
        for i, text in enumerate(LEFT):
            body = text if i == 0 else text  # the second ends with a hyphenated word
            if i == 1:
                _textbox(page, (72, 100 + i * 120, 290, 200 + i * 120), body, 10)
            else:
                _textbox(page, (72, 100 + i * 120, 290, 200 + i * 120), f"{body} (page {n})", 10)
        _textbox(
            page,
            (72, 400, 540, 440),
            f"Figure {n}: Energy decay of quasi-convex flows over time on page {n}.",
            9,
        )
        _textbox(page, (72, 460, 290, 520), "0.91 0.88 0.93\n12.5 13.1 14.7\n3.25 3.58 4.01", 9)
    doc.save(path)
    return path


def _texts(parsed: dict[str, Any], kind: str) -> list[str]:
    return [b["text"] for b in parsed["blocks"] if b["kind"] == kind]


class TestLayout:
    def test_two_columns_read_left_then_right_hyphens_joined(self, tmp_path: Path) -> None:
        parsed = parse_pdf(str(two_column_paper(tmp_path / "p.pdf")), max_pages=100)
        paras = [t for t in _texts(parsed, "para") if "(page 1)" in t or "experimented" in t]
        first_page = " ".join(_texts(parsed, "para")[:3])
        # Reading order: left column's two blocks, then the right column's.
        assert first_page.index("left column opens") < first_page.index("right column of")
        # "experi-" + "mented" across the column break is one word again.
        assert any("we experimented with" in t for t in paras), paras
        assert not any("experi-" in t for t in _texts(parsed, "para"))

    def test_running_headers_and_page_numbers_removed(self, tmp_path: Path) -> None:
        parsed = parse_pdf(str(two_column_paper(tmp_path / "p.pdf")), max_pages=100)
        everything = " ".join(b["text"] for b in parsed["blocks"])
        assert "Journal of Reproducible Tests" not in everything
        assert not any(b["text"].strip() in {"1", "2", "3", "4"} for b in parsed["blocks"])

    def test_captions_and_tables_kept_as_such(self, tmp_path: Path) -> None:
        parsed = parse_pdf(str(two_column_paper(tmp_path / "p.pdf")), max_pages=100)
        captions = parsed["structure"]["captions"]
        assert [c["label"] for c in captions] == ["Figure 1", "Figure 2", "Figure 3", "Figure 4"]
        tables = _texts(parsed, "table")
        assert len(tables) == 4 and "0.91 0.88 0.93" in tables[0]
        chunks = chunk_blocks(parsed["blocks"], paper="Flows", max_tokens=220)
        caption_chunks = [c for c in chunks if c.kind == "caption"]
        assert caption_chunks[1].locator == "Flows | Figure 2 | p. 2"
        assert {c.kind for c in chunks} == {"text", "caption", "table"}

    def test_shared_paper_without_its_furniture(self) -> None:
        # CiteSee (ACM format): "Chang et al." / "CiteSee: ..." headers with page numbers.
        parsed = parse_pdf(str(PDF_DIR / "2302.07302v1.pdf"), max_pages=100)
        assert parsed["title"].startswith("CiteSee: Augmenting Citations in Scientific Papers")
        paras = _texts(parsed, "para")
        assert not any(t.startswith("arXiv:2302.07302") for t in paras)
        later = [b["text"] for b in parsed["blocks"] if b["page"] > 1]
        heads = [t for t in later if t.startswith(("CiteSee: Augmenting", "Chang et al."))]
        assert heads == [], heads[:3]
        chunks = chunk_blocks(parsed["blocks"], paper=parsed["title"], max_tokens=220)
        assert all(c.locator.endswith(f"p. {c.page}") for c in chunks)

    def test_ligatures_are_read_as_letters(self) -> None:
        # SciBERT is set with "ﬁ" ligatures: kept, "scientific" would never match a search.
        parsed = parse_pdf(str(PDF_DIR / "1903.10676.pdf"), max_pages=100)
        text = " ".join(b["text"] for b in parsed["blocks"])
        assert not any(c in text for c in "\ufb00\ufb01\ufb02\ufb03\ufb04")
        assert "scientific" in text and "classification" in text


class TestReferences:
    def test_entries_assembled_across_blocks(self) -> None:
        parsed = parse_pdf(str(PDF_DIR / "2020.acl-main.447.pdf"), max_pages=100)
        refs = parsed["structure"]["references"]
        first = parse_reference(refs[0])
        assert first.authors == ["Riaz Ahmad", "Muhammad Tanvir Afzal"]
        assert first.year == 2018
        assert first.title == "Cad: an algorithm for citation-anchors detection in research papers"
        # Every entry begins with an author and carries a year (no torn halves).
        assert sum(parse_reference(r).year is not None for r in refs) >= 0.9 * len(refs)

    def test_numbered_and_doi_entries(self) -> None:
        entry = parse_reference(
            "[12] Ilias Chalkidis, Ion Androutsopoulos, and Nikolaos Aletras. Neural legal "
            "judgment prediction in English. In Proceedings of ACL, pages 4317–4323, 2019. "
            "doi: 10.18653/v1/P19-1424."
        )
        assert entry.authors == ["Ilias Chalkidis", "Ion Androutsopoulos", "Nikolaos Aletras"]
        assert entry.title == "Neural legal judgment prediction in English"
        assert entry.year == 2019 and entry.doi == "10.18653/v1/p19-1424"

    def test_surname_initials_style(self) -> None:
        entry = parse_reference(
            "(3) Goh, G. B.; Hodas, N. O.; Vishnu, A. Deep learning for computational "
            "chemistry. Journal of Computational Chemistry 2017, 38, 1291–1307."
        )
        assert entry.authors == ["Goh, G. B.", "Hodas, N. O.", "Vishnu, A."]
        assert entry.title == "Deep learning for computational chemistry"
        assert entry.year == 2017

    def test_normalised_titles_fold_case_accents_ligatures_and_hyphens(self) -> None:
        assert normalise("Scientiﬁc Über-Text: Real-World") == "scientific ubertext realworld"
