"""`leaflab library ingest` and `library search` against the API and a real library
service: plain lines and rows in a pipe, a bar and a table on a terminal, JSON with
--json; a paper whose file name and title attack the terminal prints escaped.

It lives beside the library tests to share their one library service: a second one,
started by another package's copy of the fixture, would consume half of the library
queue's tasks into its own store and break the other package's ingestion tests."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from services.cli.term.literal import literal
from services.common.models import Document
from tests.cli.conftest import HOSTILE, run_cli, visible
from tests.conftest import Stack
from tests.fixtures.builders import make_user
from tests.fixtures.processes import Services
from tests.library.conftest import PDF_DIR, TOKEN, LibraryService
from tests.library.hostile_pdfs import text_pdf
from tests.library.test_references import paper_pdf

TITLE = HOSTILE + " on Quasi-Convex Flows"
SEARCH_HEADER = ["#", "SCORE", "PAPER", "PAGE", "SECTION", "TEXT"]


@pytest.fixture(scope="module")
def library_api(
    stack: Stack,
    library: LibraryService,
    files_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    svc = Services(stack, tmp_path_factory.mktemp("cli_library"))
    svc.env.update(
        {
            "LEAFLAB_LIBRARY_URL": library.url,
            "LEAFLAB_INTERNAL_TOKEN": TOKEN,
            "LEAFLAB_FILES_DIR": str(files_dir),
        }
    )
    try:
        yield svc.api()
    finally:
        svc.stop()


def _paper(folder: Path) -> Path:
    path = folder / "\x1b[31mevil [bold]paper[red].pdf"  # no "/": it is a file name
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Quasi-Convex Flows", fontsize=16, fontname="hebo")
    body = "We study quasi-convex flows on compact manifolds and their energy decay."
    page.insert_text((72, 110), body, fontsize=10, fontname="helv")
    doc.set_metadata({"title": TITLE})
    path.write_bytes(doc.tobytes())  # MuPDF cannot open such a name itself
    return path


def test_ingest_then_search_in_a_pipe_as_json_and_on_a_terminal(
    library_api: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    key = make_user(session_factory).key
    pdf = _paper(tmp_path)

    added = json.loads(run_cli(library_api, key, "library", "ingest", "--json", str(pdf)).stdout)
    assert added["rejected"] == [] and len(added["items"]) == 1
    doc = added["items"][0]
    assert doc["path"] == str(pdf) and doc["status"] == "ready", doc

    again = run_cli(library_api, key, "library", "ingest", str(pdf)).stdout  # a duplicate
    assert "\x1b" not in again
    assert f"{literal(pdf)}: ready {doc['id']} (already in the library)" in again

    bar = run_cli(library_api, key, "library", "ingest", str(pdf), terminal=True).stdout
    assert "\x1b[31mevil" not in bar
    assert "1/1 documents" in visible(bar) and "pages" in visible(bar)

    query = ("library", "search", "quasi-convex flows energy decay", "--mode", "keyword")
    lines = run_cli(library_api, key, *query).stdout.splitlines()
    assert lines[0].split("\t") == SEARCH_HEADER
    hit = dict(zip(SEARCH_HEADER, lines[1].split("\t"), strict=True))
    assert hit["#"] == "1" and float(hit["SCORE"]) > 0 and hit["PAGE"] == "1"
    assert hit["PAPER"] == literal(TITLE)  # the hostile title, escaped on one line
    # The section column never repeats the paper or the page.
    assert "Quasi-Convex Flows" not in hit["SECTION"] and "p. 1" not in hit["SECTION"]
    assert "quasi-convex flows" in hit["TEXT"]

    found = json.loads(run_cli(library_api, key, *query, "--json").stdout)
    assert found["items"][0]["title"] == TITLE and found["items"][0]["document_id"] == doc["id"]

    table = run_cli(library_api, key, *query, terminal=True).stdout
    assert "\x1b[31mred" not in table and "\x1b]0;" not in table
    shown = visible(table)
    assert "\x1b" not in shown and re.search(r"^\s*#\s+SCORE\s+PAPER\s+PAGE", shown, re.M)
    assert "\\x1b[31m" in shown and "quasi-convex" in shown
    assert all(len(line) <= 80 for line in shown.splitlines())

    bad = run_cli(library_api, key, "library", "search", "x", "--k", "0", ok=False)
    assert bad.exit_code == 1 and "Error:" in bad.output and "Traceback" not in bad.output


def test_delete_removes_the_paper_from_search_and_says_so(
    library_api: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """`leaflab library delete ID`: a line saying it is gone, search no longer finds it;
    the same id again, or a malformed one, is an error that says why (no traceback)."""
    key = make_user(session_factory).key
    marker = "plinthwort" + tmp_path.name[-6:].replace("_", "")
    pdf = text_pdf(tmp_path / "deleted-by-cli.pdf", pages=1, marker=marker)
    added = json.loads(run_cli(library_api, key, "library", "ingest", "--json", str(pdf)).stdout)
    doc_id = added["items"][0]["id"]
    assert added["items"][0]["status"] == "ready", added
    query = ("library", "search", f"{marker} energy estimates", "--mode", "keyword", "--json")
    hits = json.loads(run_cli(library_api, key, *query).stdout)["items"]
    assert doc_id in {h["document_id"] for h in hits}

    out = run_cli(library_api, key, "library", "delete", doc_id).stdout
    assert out == f"deleted document {doc_id}: its passages no longer appear in search\n"
    hits = json.loads(run_cli(library_api, key, *query).stdout)["items"]
    assert doc_id not in {h["document_id"] for h in hits}

    again = run_cli(library_api, key, "library", "delete", doc_id, ok=False)
    assert again.exit_code == 1 and "HTTP 404 not_found: document not found" in again.output
    bad = run_cli(library_api, key, "library", "delete", "not-a-uuid", ok=False)
    assert bad.exit_code == 1 and "a document id is a UUID" in bad.output
    assert "Traceback" not in again.output + bad.output


def test_list_shows_each_papers_authors_and_year(
    library_api: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """`leaflab library list`: a shared paper's first authors and year in its row, the
    full lists with --json; a hostile title prints escaped."""
    key = make_user(session_factory).key
    pdf = tmp_path / "citesee.pdf"
    pdf.write_bytes((PDF_DIR / "2302.07302v1.pdf").read_bytes())
    added = json.loads(run_cli(library_api, key, "library", "ingest", "--json", str(pdf)).stdout)
    assert added["items"][0]["status"] == "ready", added
    listed = json.loads(run_cli(library_api, key, "library", "list", "--json").stdout)["items"]
    (doc,) = listed
    assert doc["authors"][0] == "Joseph Chee Chang" and doc["year"] == 2023
    lines = run_cli(library_api, key, "library", "list").stdout.splitlines()
    assert lines[0].split() == ["ID", "TITLE", "AUTHORS", "YEAR", "STATUS", "COLLECTION"]
    row = "\n".join(lines[1:])
    assert "Joseph Chee Chang, Amy X. Zhang, Jonathan Bragg et al." in row
    assert "2023" in row and "ready" in row
    assert "\x1b" not in row


def test_list_marks_a_retracted_paper(
    library_api: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """A document the metadata lookup marked retracted reads "RETRACTED" before its
    title in `leaflab library list`, and ``"retracted": true`` with --json."""
    key = make_user(session_factory).key
    title = "Withdrawn Findings on Quasi-Convex Flows"
    pdf = paper_pdf(tmp_path / "withdrawn.pdf", title=title, doi=None, references=[])
    added = json.loads(run_cli(library_api, key, "library", "ingest", "--json", str(pdf)).stdout)
    doc_id = added["items"][0]["id"]
    with session_factory() as db, db.begin():
        db.execute(update(Document).where(Document.id == uuid.UUID(doc_id)).values(retracted=True))
    (doc,) = json.loads(run_cli(library_api, key, "library", "list", "--json").stdout)["items"]
    assert doc["retracted"] is True
    (row,) = run_cli(library_api, key, "library", "list").stdout.splitlines()[1:]
    assert "RETRACTED Withdrawn Findings" in row
