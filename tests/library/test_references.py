"""References link to the cited library documents, whichever paper arrives first.

Through the real library service: a constructed paper cites a shared paper
(by title) and a constructed companion (by DOI); the companion cites the
first paper back. Links appear on GET /documents/{id}/references, only
within the citing document's collection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pymupdf
from sqlalchemy.orm import Session, sessionmaker

from tests.library.conftest import PDF_DIR, LibraryService, make_user, wait_terminal

CITED_SHARED = "2304.02623v1.pdf"  # "Beyond Summarization: Designing AI Support for ..."


def paper_pdf(path: Path, *, title: str, doi: str | None, references: list[str]) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    doc.set_metadata({"title": title})
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 110), title, fontsize=16, fontname="hebo")
    if doi:
        page.insert_text((72, 130), f"DOI: https://doi.org/{doi}", fontsize=9)
    page.insert_text((72, 170), "1 Introduction", fontsize=12, fontname="hebo")
    body = (
        "We study how a lab library links the papers it holds. Citations are parsed "
        "into entries and matched against the documents already ingested. " * 3
    )
    page.insert_textbox(pymupdf.Rect(72, 185, 540, 330), body, fontsize=10, fontname="helv")
    page.insert_text((72, 360), "References", fontsize=12, fontname="hebo")
    y = 375
    for ref in references:
        page.insert_textbox(pymupdf.Rect(72, y, 540, y + 40), ref, fontsize=9, fontname="helv")
        y += 48
    doc.save(path)
    return path


def _upload(client: httpx.Client, lib: LibraryService, headers: dict[str, str], path: Path) -> str:
    with path.open("rb") as fh:
        resp = client.post(
            f"{lib.url}/documents",
            headers=headers,
            files={"file": (path.name, fh, "application/pdf")},
        )
    assert resp.status_code == 202, resp.text
    ident: str = resp.json()["id"]
    doc = wait_terminal(client, lib, headers, ident)
    assert doc["status"] == "ready", doc
    return ident


def _refs(
    client: httpx.Client, lib: LibraryService, headers: dict[str, str], ident: str
) -> list[dict[str, Any]]:
    resp = client.get(f"{lib.url}/documents/{ident}/references", headers=headers)
    assert resp.status_code == 200, resp.text
    items: list[dict[str, Any]] = resp.json()["items"]
    return items


def test_references_link_both_ways(
    library: LibraryService,
    session_factory: sessionmaker[Session],
    unique: str,
    tmp_path: Path,
) -> None:
    user, stranger = make_user(session_factory, unique), make_user(session_factory, unique)
    headers = library.headers(user)
    doi = f"10.5555/leaflab.{unique}"
    citing_title = f"Linking Citations Across a Lab Library {unique}"
    citing = paper_pdf(
        tmp_path / "citing.pdf",
        title=citing_title,
        doi=None,
        references=[
            "[1] Sheng Shen, Tal August, and Kyle Lo. 2023. Beyond Summarization: Designing "
            "AI Support for Real-World Expository Writing Tasks. In CHI Workshop.",
            f"[2] Ada Lovelace. 2024. A companion note. Journal of Tests 7. doi:{doi}",
            "[3] Nobody Here. 2019. A paper the library does not hold. Nowhere Press.",
        ],
    )
    companion = paper_pdf(
        tmp_path / "companion.pdf",
        title=f"The Companion Paper {unique}",
        doi=doi,
        references=[f"[1] Some Author. 2025. {citing_title}. In Proceedings of Tests."],
    )
    with httpx.Client(timeout=60) as client:
        citing_id = _upload(client, library, headers, citing)
        refs = _refs(client, library, headers, citing_id)
        assert [r["year"] for r in refs] == [2023, 2024, 2019]
        assert refs[0]["title"].startswith("Beyond Summarization: Designing AI Support")
        assert refs[0]["authors"] == ["Sheng Shen", "Tal August", "Kyle Lo"]
        assert refs[1]["doi"] == doi
        assert [r["cited_document_id"] for r in refs] == [None, None, None]

        # The cited papers arrive after the citing one: its entries link to them.
        shared_id = _upload(client, library, headers, PDF_DIR / CITED_SHARED)
        companion_id = _upload(client, library, headers, companion)
        refs = _refs(client, library, headers, citing_id)
        assert [r["cited_document_id"] for r in refs] == [shared_id, companion_id, None]
        assert refs[0]["cited_title"].startswith("Beyond Summarization")

        # The companion arrives after the paper it cites: linked at once, by title.
        back = _refs(client, library, headers, companion_id)
        assert [r["cited_document_id"] for r in back] == [citing_id]

        # Another user's library holds the same shared paper: no link across collections,
        # and the citing paper's references are not theirs to read.
        other_h = library.headers(stranger)
        other_citing = _upload(client, library, other_h, citing)
        other_refs = _refs(client, library, other_h, other_citing)
        assert [r["cited_document_id"] for r in other_refs] == [None, None, None]
        resp = client.get(f"{library.url}/documents/{citing_id}/references", headers=other_h)
        assert resp.status_code == 404
