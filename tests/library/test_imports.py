"""Bibliography imports through the real API app and library service: each format's
entries become documents with their metadata, an arXiv entry's PDF is fetched from
a loopback server and ingested, re-importing adds nothing, an entry the library
already holds (an ingested shared PDF, by title) is matched, the collection exports
as BibTeX, and bad files are refused with a clear status."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.orm import Session, sessionmaker

from services.common.bibliography import read_bibliography
from tests.fixtures.builders import make_user
from tests.library.api_app import api_client, bearer
from tests.library.conftest import PDF_DIR, LibraryService, PdfServer, wait_terminal
from tests.library.imports_helpers import (
    BBT_JSON,
    CSL_JSON,
    REFS_BIB,
    by_title,
    documents,
    entry,
    post_import,
    serve_arxiv,
    start_import,
    wait_import,
)
from tests.library.test_metadata import _upload


def test_bibtex_import_then_reimport_adds_nothing_and_the_collection_exports(
    library: LibraryService,
    files_dir: Path,
    pdf_server: PdfServer,
    session_factory: sessionmaker[Session],
) -> None:
    serve_arxiv(pdf_server)
    user = make_user(session_factory)
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        first = wait_import(client, user.key, start_import(client, user.key, REFS_BIB))
        assert first["format"] == "bibtex" and first["total"] == 20 and first["done"] == 20
        # 18 readable entries: SciBERT's PDF fetched, the BERT preprint entry is the
        # same DOI as the NAACL one (matched), the rest kept without a PDF.
        assert first["summary"] == {
            "matched": 1,
            "fetched": 1,
            "metadata_only": 16,
            "skipped": 2,
            "pending": 0,
        }
        assert entry(first, "devlin2018bert")["state"] == "matched"
        assert entry(first, "broken_unclosed")["reason"].startswith("malformed entry at line")
        assert "no open-access PDF known" in entry(first, "erdos1959")["reason"]
        # An arXiv id the server does not have: kept, and the entry says why.
        assert "PDF not fetched" in entry(first, "vaswani2017attention")["reason"]

        docs = documents(client, user.key)
        assert len(docs) == 17
        godel = by_title(docs, "Über formal unentscheidbare Sätze")
        assert godel["authors"] == ["Kurt Gödel"] and godel["year"] == 1931
        assert godel["venue"] == "Monatshefte für Mathematik und Physik"
        assert godel["doi"] == "10.1007/bf01700692" and godel["status"] == "metadata_only"
        assert godel["metadata_source"]["authors"] == "import"
        bert = by_title(docs, "BERT: Pre-training")
        assert bert["authors"] == [
            "Jacob Devlin",
            "Ming-Wei Chang",
            "Kenton Lee",
            "Kristina Toutanova",
        ]
        assert bert["year"] == 2019 and bert["venue"].startswith("Proceedings of the 2019")
        garcia = by_title(docs, "Informe técnico")
        assert garcia["authors"] == ["José García Márquez", "Søren Ørsted", "Anna van der Berg"]
        vaswani = by_title(docs, "Attention Is All You Need")
        assert vaswani["arxiv_id"] == "1706.03762" and vaswani["authors"][6] == "Łukasz Kaiser"

        scibert = by_title(docs, "SciBERT")
        with httpx.Client(timeout=30) as raw:
            ready = wait_terminal(raw, library, library.headers(user.id), scibert["id"])
        assert ready["status"] == "ready" and int(ready["chunks"]) > 0  # type: ignore[call-overload]
        assert ready["source_url"] == pdf_server.url("arxiv/1903.10676")
        # The bibliography's metadata outranks what ingestion read from the PDF.
        assert ready["authors"] == ["Iz Beltagy", "Kyle Lo", "Arman Cohan"]
        assert ready["metadata_source"]["authors"] == "import"

        second = wait_import(client, user.key, start_import(client, user.key, REFS_BIB))
        assert second["summary"] == {
            "matched": 18,
            "fetched": 0,
            "metadata_only": 0,
            "skipped": 2,
            "pending": 0,
        }
        assert len(documents(client, user.key)) == 17

        exported = client.get("/v1/library/export.bib", headers=bearer(user.key))
        assert exported.status_code == 200
        assert exported.headers["content-type"].startswith("application/x-bibtex")
        assert "@article{godel1931uber," in exported.text
        assert "author = {Kurt Godel}" in exported.text
        assert "doi = {10.1007/bf01700692}" in exported.text
        assert "eprint = {1903.10676}" in exported.text
        again = read_bibliography(exported.content)
        assert len(again.entries) == 17 and not again.skipped


def test_zotero_csl_json_then_better_bibtex_json(
    library: LibraryService,
    files_dir: Path,
    pdf_server: PdfServer,
    session_factory: sessionmaker[Session],
) -> None:
    serve_arxiv(pdf_server)
    user = make_user(session_factory)
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        csl = wait_import(client, user.key, start_import(client, user.key, CSL_JSON))
        assert csl["format"] == "csl-json" and csl["total"] == 6
        assert csl["summary"]["skipped"] == 1 and csl["summary"]["fetched"] == 1
        assert entry(csl, "NOTITLE1")["reason"] == "the entry has no title"
        docs = documents(client, user.key)
        erdos = by_title(docs, "On random graphs I")
        assert erdos["authors"] == ["Paul Erdős", "Alfréd Rényi"] and erdos["year"] == 1959
        assert erdos["venue"] == "Publicationes Mathematicae Debrecen"
        bert = by_title(docs, "BERT")
        assert bert["doi"] == "10.18653/v1/n19-1423" and bert["year"] == 2019
        scibert = by_title(docs, "SciBERT")
        # arXiv's own DOI (10.48550/arXiv.…) is read as the arXiv id, not kept as a DOI.
        assert scibert["arxiv_id"] == "1903.10676" and scibert["doi"] is None

        bbt = wait_import(client, user.key, start_import(client, user.key, BBT_JSON))
        assert bbt["format"] == "better-bibtex-json"
        assert bbt["total"] == 5  # the note item is not a paper
        assert entry(bbt, "beltagySciBERTPretrainedLanguage2019")["state"] == "matched"
        assert entry(bbt, "beltagySciBERTPretrainedLanguage2019")["document_id"] == scibert["id"]
        s2orc = by_title(documents(client, user.key), "S2ORC")
        # Editors are not authors; a local attachment path is not a PDF to fetch.
        assert s2orc["authors"] == [
            "Kyle Lo",
            "Lucy Lu Wang",
            "Mark Neumann",
            "Rodney Kinney",
            "Daniel Weld",
        ]
        assert s2orc["year"] == 2020 and s2orc["status"] == "metadata_only"
        assert s2orc["venue"].startswith("Proceedings of the 58th Annual Meeting")
        knuth = by_title(documents(client, user.key), "Literate Programming")
        assert knuth["authors"] == ["Donald E. Knuth"] and knuth["doi"] == "10.1093/comjnl/27.2.97"


def test_an_entry_for_an_ingested_shared_pdf_is_matched_by_title(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    user = make_user(session_factory)
    pdf = PDF_DIR / "2304.02623v1.pdf"
    bib = (
        b"@inproceedings{shen2023beyond,\n"
        b"  author = {Shen, Zejiang and August, Tal},\n"
        b"  title = {Beyond summarization: designing {AI} support for real-world "
        b"expository writing tasks},\n  year = {2023}\n}\n"
    )
    with api_client(library_url=library.url, files_dir=files_dir) as client:
        doc_id = _upload(client, user.key, pdf)
        with httpx.Client(timeout=30) as raw:
            assert (
                wait_terminal(raw, library, library.headers(user.id), doc_id)["status"] == "ready"
            )
        resp = post_import(client, user.key, bib, "one.bib")
        assert resp.status_code == 202, resp.text
        body = wait_import(client, user.key, resp.json()["id"])
        assert body["summary"]["matched"] == 1, body
        assert entry(body, "shen2023beyond")["document_id"] == doc_id
        assert [d["id"] for d in documents(client, user.key)] == [doc_id]


def test_bad_files_are_refused_with_a_reason_and_nothing_is_kept(
    library: LibraryService, files_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    user, other = make_user(session_factory), make_user(session_factory)
    with api_client(library_url=library.url, files_dir=files_dir, max_import_bytes=4000) as client:
        cases = {
            "notes.txt": b"Just some notes about papers I should read.\n",
            "paper.pdf": (PDF_DIR / "1903.10676.pdf").read_bytes()[:3000],
            "broken.json": b'[{"type": "article", "title": ',
            "other.json": b'{"hello": "world"}',
            "empty.bib": b"% nothing here\n@comment{still nothing}\n",
        }
        for name, content in cases.items():
            resp = post_import(client, user.key, content, name)
            assert resp.status_code == 422, (name, resp.text)
            assert resp.json()["error"]["code"] == "not_a_bibliography"
            assert "BibTeX" in resp.json()["error"]["message"] or name == "other.json"
        big = b"@misc{k, title={" + b"x" * 5000 + b"}}"
        resp = post_import(client, user.key, big, "big.bib")
        assert resp.status_code == 413 and "larger than 4000 bytes" in resp.text
        resp = client.post("/v1/library/imports", headers=bearer(user.key), data={"project": "x"})
        assert resp.status_code == 400
        assert client.get("/v1/library/imports", headers=bearer(user.key)).json()["items"] == []
        # An import is its importer's: another user gets the same 404 as a missing one.
        mine = post_import(client, user.key, b"@misc{a, title={A Paper Of Mine Only}}", "a.bib")
        assert mine.status_code == 202
        theirs = client.get(f"/v1/library/imports/{mine.json()['id']}", headers=bearer(other.key))
        assert theirs.status_code == 404
        assert client.get("/v1/library/imports", headers=bearer(other.key)).json()["items"] == []
