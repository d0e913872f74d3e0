"""Tables kept as Markdown with their caption, searchable by kind; line-end
hyphenation joined while real compounds keep their hyphen.

The paper is the shared S2ORC paper (2020.acl-main.447): its page 6 holds
Table 5 (14 result rows) and Table 6, LaTeX booktabs tables whose rows the
old parser flattened into number blocks.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pymupdf
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.common.hyphenation import dehyphenate
from services.library.chunking import chunk_blocks, estimate_tokens
from services.library.parsing.pdf_structure import parse_pdf
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.library_search import library_tools
from services.worker.tools.ports import LibraryEndpoint
from tests.conftest import Stack
from tests.fixtures.library_services import library_services
from tests.library.api_app import api_client, bearer, new_email, user_with_key
from tests.library.conftest import PDF_DIR, TOKEN, wait_terminal

S2ORC = PDF_DIR / "2020.acl-main.447.pdf"
HYPHEN_TEXT = (
    "Our zymo-\ngraphic assay is effi-\ncient and robust: a state-of-the-\n"
    "art method, used with BERT-\nbase encoders and a one-to-\nmany mapping of samples."
)


def s2orc_tables_page(path: Path) -> Path:
    """Page 6 of the shared S2ORC paper as a one-page PDF (its own bytes, not redrawn)."""
    doc = pymupdf.open()
    doc.insert_pdf(pymupdf.open(S2ORC), from_page=5, to_page=5)
    doc.save(path)
    return path


def hyphen_paper(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 100, 300, 300), HYPHEN_TEXT, fontsize=10)
    page.insert_textbox(
        pymupdf.Rect(72, 320, 540, 400),
        "A second paragraph keeps the page from being mistaken for a scan of an image.",
        fontsize=10,
    )
    doc.save(path)
    return path


def _tables(parsed: dict) -> list[dict]:
    return [b for b in parsed["blocks"] if b["kind"] == "table" and b.get("env")]


class TestParsing:
    def test_tables_become_markdown_after_their_caption_and_leave_the_text(self) -> None:
        parsed = parse_pdf(str(S2ORC), max_pages=100)
        tables = {b["env"]: b for b in _tables(parsed)}
        assert {"Table 5", "Table 6"} <= set(tables), sorted(tables)
        five = tables["Table 5"]["text"]
        assert five.startswith("Table 5: S2ORC-SCIBERT test results")
        assert "\n\n| Domain | Dataset | Reference | Task | SCIBERT |" in five
        assert "| --- |" in five
        assert "| BC5CDR | Li et al. (2016) | NER | 90.01 | 90.41 ± 0.06 |" in five
        # No flattened copy: the cells and the caption are nowhere else.
        others = " ".join(b["text"] for b in parsed["blocks"] if b["kind"] != "table")
        assert "90.41" not in others and "Krallinger et al. (2017)" not in others
        assert "S2ORC-SCIBERT test results are comparable" not in others
        # Figure captions stay captions of their own.
        figures = [b for b in parsed["blocks"] if b["kind"] == "caption"]
        assert {"Figure 1", "Figure 2", "Figure 3"} <= {b["env"] for b in figures}
        assert not any("| --- |" in b["text"] for b in figures)

    def test_detection_off_leaves_the_old_flattened_reading(self) -> None:
        parsed = parse_pdf(str(S2ORC), max_pages=100, tables=False)
        assert _tables(parsed) == []
        assert "90.41" in " ".join(b["text"] for b in parsed["blocks"])

    def test_a_table_is_one_chunk_or_split_by_rows_repeating_its_header(self) -> None:
        parsed = parse_pdf(str(S2ORC), max_pages=100)
        whole = [c for c in chunk_blocks(parsed["blocks"], paper="S2ORC", max_tokens=2000)]
        fives = [c for c in whole if c.kind == "table" and c.env == "Table 5"]
        assert len(fives) == 1 and fives[0].locator == "S2ORC | 4 Evaluation | Table 5 | p. 6"
        split = [
            c
            for c in chunk_blocks(parsed["blocks"], paper="S2ORC", max_tokens=256)
            if c.env == "Table 5"
        ]
        assert len(split) >= 2
        header = "| Domain | Dataset | Reference | Task | SCIBERT | S2ORC- |"
        with_rows = [c for c in split if "| --- |" in c.text]
        assert len(with_rows) >= 2 and all(header in c.text for c in with_rows)
        assert split[0].text.startswith("Table 5:")  # the caption leads
        assert all(c.text.startswith("Table 5 (continued)") for c in with_rows[1:])
        assert all(estimate_tokens(c.text) <= 256 for c in split)
        rows = [
            r for c in split for r in c.text.splitlines() if r.startswith("| ") and "---" not in r
        ]
        assert sum("| NER |" in r for r in rows) == 4  # every row once, no row lost
        assert {c.kind for c in whole} >= {"text", "caption", "table"}

    def test_line_end_hyphens_joined_real_hyphens_kept(self, tmp_path: Path) -> None:
        parsed = parse_pdf(str(hyphen_paper(tmp_path / "h.pdf")), max_pages=10)
        text = " ".join(b["text"] for b in parsed["blocks"])
        assert "zymographic assay is efficient" in text
        assert "state-of-the-art method" in text and "BERT-base encoders" in text
        assert "one-to-many mapping" in text  # a compound before the break keeps the hyphen
        assert "effi-" not in text and "zymo-" not in text
        # The one-shot reader (pdf_fetch) applies the same rule to its plain text.
        assert dehyphenate(HYPHEN_TEXT).startswith("Our zymographic assay is efficient")
        assert "state-of-the-art" in dehyphenate(HYPHEN_TEXT)


def test_kind_search_through_the_real_services(
    stack: Stack,
    tmp_path: Path,
    isolated_redis_url: str,
    session_factory: sessionmaker[Session],
) -> None:
    with session_factory() as db, db.begin():
        user, key = user_with_key(db, new_email("tables"))
    papers = [s2orc_tables_page(tmp_path / "s2orc-p6.pdf"), hyphen_paper(tmp_path / "hy.pdf")]
    with (
        library_services(stack, tmp_path, isolated_redis_url) as (_, library),
        api_client(
            library_url=library.url, files_dir=tmp_path / "files", redis_url=isolated_redis_url
        ) as api,
        httpx.Client(timeout=60) as raw,
    ):
        auth = bearer(key)
        lib_headers = {"X-Leaflab-Internal": "test-internal-token", "X-Leaflab-User": str(user.id)}
        for pdf in papers:
            with pdf.open("rb") as fh:
                resp = api.post(
                    "/v1/library/documents",
                    headers=auth,
                    files={"file": (pdf.name, fh, "application/pdf")},
                )
            assert resp.status_code == 202, resp.text

            class _Lib:
                url = library.url

            doc = wait_terminal(raw, _Lib, lib_headers, resp.json()["id"])  # type: ignore[arg-type]
            assert doc["status"] == "ready", doc

        def search(**params: object) -> httpx.Response:
            return api.get("/v1/library/search", headers=auth, params=params)

        tables = search(q="BC5CDR NER results", kind="table", k=20).json()["items"]
        assert tables and {h["kind"] for h in tables} == {"table"}
        assert {h["locator"].split(" | ")[-2] for h in tables} <= {"Table 5", "Table 6"}
        # Table 5 is split between rows (256-piece window): the caption leads its first piece.
        assert any(h["text"].startswith("Table 5: S2ORC-SCIBERT") for h in tables)
        assert any("| BC5CDR | Li et al. (2016) | NER |" in h["text"] for h in tables)
        assert all("| --- |" in h["text"] or h["text"].startswith("Table") for h in tables)

        mixed = search(q="BC5CDR NER results", k=20).json()["items"]
        assert {h["kind"] for h in mixed} <= {"text", "table", "caption"}
        texts = search(q="BC5CDR NER results", kind="text", k=20).json()["items"]
        assert texts and {h["kind"] for h in texts} == {"text"}
        assert not any("| --- |" in h["text"] for h in texts)
        captions = search(q="figure", kind="caption", mode="keyword").json()["items"]
        assert {h["kind"] for h in captions} <= {"caption"}

        for bad in ("tables", "TABLE", "", "x" * 500, "table;drop"):
            resp = search(q="results", kind=bad)
            assert resp.status_code == 422, (bad, resp.text)
        # The library service itself says 400 with the allowed kinds.
        direct = raw.get(
            f"{library.url}/search", headers=lib_headers, params={"q": "x", "kind": "figure"}
        )
        assert direct.status_code == 400 and "text, table, caption" in direct.text

        # A word split at a line end is found whole; real compounds keep their hyphen.
        hits = search(q="zymographic", mode="keyword").json()["items"]
        assert hits and "zymographic assay is efficient" in hits[0]["text"]
        assert "state-of-the-art" in hits[0]["text"] and "BERT-base" in hits[0]["text"]
        assert search(q="efficient", mode="keyword", kind="text").json()["items"]

        # The agent's tool narrows the same way, and says which passages are tables.
        (tool,) = library_tools()
        ctx = ToolContext(
            job_id="j",
            session_id=None,
            user_id=str(user.id),
            project_id=None,
            workspace=tmp_path,
            tool_call_id="c",
            step_key="k",
            emit=lambda *_: None,
            library=LibraryEndpoint(url=library.url, internal_token=TOKEN),
        )
        result = tool.run(tool.parse({"query": "BC5CDR NER results", "kind": "table"}), ctx)
        assert result.data["items"] and {h["kind"] for h in result.data["items"]} == {"table"}
        assert "| Table 5 | p. 1 (table)" in result.content
        with pytest.raises(ToolError) as info:
            tool.parse({"query": "x", "kind": "figure"})
        assert info.value.code == "invalid_arguments"
